"""cmsc — charged mass-spring systems for Blender.

Registration only: the bpy-facing code lives in `ui/`, the pure-Python simulation layer (no
bpy) in `sim/`, the native library in `lib/`. If the library is missing or has the wrong ABI,
registration still succeeds and the panels show the problem.
"""

bl_info = {
    "name": "cmsc: Charged Mass-Spring Systems",
    "author": "cmsc developers",
    "version": (0, 1, 0),
    "blender": (4, 2, 0),
    "location": "Properties > Physics > Charged Mass-Spring",
    "description": "Animate meshes as charged mass-spring systems (IMEX, DDEF) and bake to PC2",
    "category": "Physics",
}


def register():
    from . import ui

    ui.register()


def unregister():
    from . import ui

    ui.unregister()
