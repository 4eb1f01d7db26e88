"""bpy-facing code. Modules, each importing only those listed before it (no cycles):

- `simulated`: which objects are simulated (`is_simulated`), the one predicate of all the others;
- `text`: wrapped labels; `bridge`: every read and write of mesh data and F-curves ↔ numpy;
- `activity`: what runs now (modal bakes, previews and their status, preview suspension), by
  `Object.session_uid`;
- `preferences`: add-on preferences, library/GPU/thread status;
- `cache`: the bake's cache (Mesh Cache modifier or shape keys): where it goes in the modifier
  stack, exists, finish, free, and whose bake it is (the .blend and object that made it);
- `inputs`: the scene as simulation inputs (`Setup`, per-frame inputs, `BakeJob`);
- `preview`: the live preview handler; `watch`: marks bakes outdated when the mesh, its groups,
  the scene or an external charge change; `bake`: collecting, running (modal or not) and
  finishing a bake; `fit`: the charge fit;
- `properties`, `operators` (all of them), `panels`: what Blender registers; `versioning`: files
  of earlier versions keep their meaning.

Classes are registered in dependency order, unregistered in reverse."""

import bpy

from . import operators, panels, preferences, preview, properties, versioning, watch

_modules = (properties, preferences, operators, panels)


def register():
    for m in _modules:
        for cls in m.CLASSES:
            bpy.utils.register_class(cls)
    properties.attach()
    panels.register()
    preview.register()
    watch.register()
    versioning.register()
    preferences.apply_threads()


def unregister():
    versioning.unregister()
    watch.unregister()
    preview.unregister()
    panels.unregister()
    properties.detach()
    for m in reversed(_modules):
        for cls in reversed(m.CLASSES):
            bpy.utils.unregister_class(cls)
