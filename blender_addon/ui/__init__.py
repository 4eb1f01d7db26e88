"""bpy-facing code: properties, preferences, operators (bake, fit), panels, the live preview handler.
Registered in dependency order, unregistered in reverse."""

import bpy

from . import fit, operators, panels, preferences, preview, properties

_modules = (properties, preferences, operators, fit, panels)


def register():
    for m in _modules:
        for cls in m.CLASSES:
            bpy.utils.register_class(cls)
    properties.attach()
    panels.register()
    preview.register()
    preferences.apply_threads()


def unregister():
    preview.unregister()
    panels.unregister()
    properties.detach()
    for m in reversed(_modules):
        for cls in reversed(m.CLASSES):
            bpy.utils.unregister_class(cls)
