"""bpy-facing code: properties, operators, panels. Registered in dependency order."""

import bpy

from . import operators, panels, properties

_modules = (properties, operators, panels)


def register():
    for m in _modules:
        for cls in m.CLASSES:
            bpy.utils.register_class(cls)
    properties.attach()


def unregister():
    properties.detach()
    for m in reversed(_modules):
        for cls in reversed(m.CLASSES):
            bpy.utils.unregister_class(cls)
