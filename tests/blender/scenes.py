"""Scene builders and readers shared by the Blender tests."""

import importlib
import math

import bpy
import numpy as np


def addon_module(name):
    """A module of the installed add-on, e.g. addon_module("ui.bake") → cmsc.ui.bake."""
    import addon_utils

    root = next(m for m in addon_utils.modules() if m.__name__.split(".")[-1] == "cmsc")
    return importlib.import_module(f"{root.__name__}.{name}")


def saved_scene(tmp_path, name):
    """A new empty file (no gravity, 24 fps, frame 1) saved as <tmp_path>/project/<name>;
    returns (scene, path of the .blend)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    sc = bpy.context.scene
    sc.cmsc.use_gravity = False
    sc.render.fps = 24
    sc.frame_set(1)
    project = tmp_path / "project"
    project.mkdir()
    blend = project / name
    assert bpy.ops.wm.save_as_mainfile(filepath=str(blend)) == {"FINISHED"}
    return sc, blend


def read_pc2(path):
    head = np.fromfile(path, dtype=np.uint8, count=32).tobytes()
    assert head[:12] == b"POINTCACHE2\0"
    points, samples = np.frombuffer(head[16:20], "<i4")[0], np.frombuffer(head[28:32], "<i4")[0]
    data = np.fromfile(path, dtype="<f4", offset=32)
    assert data.size == samples * points * 3, "sample count in the header matches the data"
    return data.reshape(samples, points, 3)


def evaluated_coords(obj):
    dg = bpy.context.evaluated_depsgraph_get()
    me = obj.evaluated_get(dg).data
    co = np.empty(3 * len(me.vertices))
    me.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def mesh_coords(obj):
    co = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def charged_sphere(tmp_path, name="ball", charge=1.0, frames=10, subdivisions=2):
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=subdivisions, radius=0.5)
    obj = bpy.context.active_object
    obj.name = name
    group = obj.vertex_groups.new(name="all")
    group.add(list(range(len(obj.data.vertices))), 1.0, "REPLACE")
    s = obj.cmsc
    s.enabled = True
    s.mass = 0.05
    s.stiffness = 20.0
    s.bending_stiffness = 2.0
    s.substeps = 2
    s.frame_start, s.frame_end = 1, frames
    s.cache_path = str(tmp_path / f"{name}.pc2")
    bpy.ops.cmsc.charge_group_add()
    s.charge_groups[0].distribution = "PER_VERTEX"  # `charge` µC on every vertex
    s.charge_groups[0].charge = charge
    return obj


def external_charge(location, charge):
    """An Empty at `location` carrying an external charge of `charge` µC."""
    bpy.ops.object.empty_add(location=location)
    empty = bpy.context.active_object
    empty.cmsc_charge.enabled = True
    empty.cmsc_charge.charge = charge
    return empty


def key_charge(item, keys, interpolation=None):
    """Keyframes a charge group's charge: keys = [(frame, µC), ...]."""
    for frame, value in keys:
        item.charge = value
        item.keyframe_insert("charge", frame=frame)
    if interpolation:
        for fc in addon_module("ui.bridge").fcurves(item.id_data):
            for p in fc.keyframe_points:
                p.interpolation = interpolation


class Reports:
    """Collects operator-style reports: report({"ERROR"}, "text")."""

    def __init__(self):
        self.items = []

    def __call__(self, levels, text):
        self.items.extend((level, text) for level in levels)

    def text(self, level=None):
        return "\n".join(t for lv, t in self.items if level is None or lv == level)


class Layout:
    """Records what a panel's draw() puts into its layout (background mode draws nothing)."""

    def __init__(self, parent=None):
        self.parent = parent
        self.items = []
        self.active = True
        self.enabled = True
        self.use_property_split = False
        self.use_property_decorate = False

    def _child(self, kind):
        child = Layout(self)
        self.items.append((kind, child))
        return child

    def row(self, **kw):
        return self._child("row")

    def column(self, **kw):
        return self._child("column")

    def box(self):
        return self._child("box")

    def grid_flow(self, **kw):
        return self._child("grid_flow")

    def prop(self, data, name, **kw):
        self.items.append(("prop", name, kw))

    def prop_search(self, data, name, *args, **kw):
        self.items.append(("prop", name, kw))

    def label(self, text="", **kw):
        self.items.append(("label", text, kw))

    def operator(self, idname, **kw):
        self.items.append(("operator", idname, kw))
        return type("OperatorProperties", (), {})()

    def menu(self, idname, **kw):
        self.items.append(("menu", idname, kw))

    def separator(self, **kw):
        pass

    def template_list(self, *args, **kw):
        self.items.append(("template_list", args[0], kw))

    def progress(self, **kw):
        self.items.append(("progress", kw.get("text", ""), kw))

    def is_active(self):
        return self.active and (self.parent is None or self.parent.is_active())

    def walk(self):
        """(layout, item) for every item in this layout and below."""
        for item in self.items:
            if item[0] in ("row", "column", "box", "grid_flow"):
                yield from item[1].walk()
            else:
                yield self, item

    def find(self, kind, name):
        """(layout, item) of the first `kind` item called `name` (prop name, label text, operator id)."""
        for layout, item in self.walk():
            if item[0] == kind and item[1] == name:
                return layout, item
        return None

    def labels(self):
        return [item[1] for _, item in self.walk() if item[0] == "label"]

    def text(self):
        """Every label's text, joined by spaces (long messages are split over several labels)."""
        return " ".join(self.labels())

    def icon_of(self, text):
        """The icon of the label where `text` starts."""
        return next(item[2].get("icon") for _, item in self.walk() if item[0] == "label" and text.startswith(item[1]))


def draw(panel_cls, context=None):
    """Runs `panel_cls.draw`, and that of each of its sub-panels whose poll passes (as Blender
    shows them, open, below it), into one recording Layout and returns it."""
    import inspect

    context = context or bpy.context
    layout = Layout()
    panel = type("Panel", (), {"layout": layout})()
    panel_cls.draw(panel, context)
    module = inspect.getmodule(panel_cls)
    parent = panel_cls.__name__
    children = [
        c for c in vars(module).values()
        if isinstance(c, type) and issubclass(c, bpy.types.Panel) and getattr(c, "bl_parent_id", "") == parent
    ]
    for sub in children:
        if sub.poll(context):
            sub.draw(panel, context)
    return layout


#: The sphere drape of issue 30, shared with tests/bench/drape_vs_cloth.py: a UV sphere of radius
#: `DRAPE_RADIUS` (64 × 32) with Collision physics, and a 2 m grid of 40 × 40 cuts (1,681
#: vertices) 5 cm above its top and `DRAPE_OFFSET` off its centre along x.
DRAPE_RADIUS = 0.6
DRAPE_OFFSET = 0.05


def drape_scene(friction):
    """Empties the scene and builds the sphere drape with Collision Friction `friction`
    (Blender's 0–80); returns the grid."""
    return _on_the_sphere(friction, (DRAPE_OFFSET, 0.0, DRAPE_RADIUS + 0.05), cuts=40, size=2.0)


def patch_scene(friction, offset):
    """Empties the scene and builds the drape's sphere with Collision Friction `friction` and a
    0.4 m grid of 16 × 16 cuts (289 vertices) resting on its top (2 cm above it: the Outer
    Thickness), its centre `offset` m along x; returns the grid."""
    return _on_the_sphere(friction, (offset, 0.0, DRAPE_RADIUS + 0.02), cuts=16, size=0.4)


def _on_the_sphere(friction, location, cuts, size):
    """Empties the scene, adds the drape's sphere with Collision Friction `friction` and a grid
    of `cuts` × `cuts` cuts and side `size` (m) at `location`; returns the grid."""
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=DRAPE_RADIUS, segments=64, ring_count=32)
    bpy.ops.object.modifier_add(type="COLLISION")
    bpy.context.active_object.collision.cloth_friction = friction
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts, y_subdivisions=cuts, size=size, location=location)
    return bpy.context.active_object


#: The strip over a cylinder of issue 30, shared with tests/bench/capstan_vs_cloth.py: a
#: cylinder of radius `STRIP_RADIUS` (64 sides, its axis along y) with Collision physics, and a
#: strip of quads `STRIP_SPACING` long and wide laid over its top on a circle of radius
#: `STRIP_PATH` (its Outer Thickness above the surface), hanging `STRIP_SIDES` m on each side.
STRIP_RADIUS = 0.3
STRIP_PATH = 0.32
STRIP_SIDES = (0.3, 0.45)
STRIP_SPACING = 0.02


def strip_scene(friction):
    """Empties the scene, adds the cylinder with Collision Friction `friction` and the strip,
    whose rest shape is the one it starts in: up its light side at x = −`STRIP_PATH`, over the
    arc, down its heavy side at x = +`STRIP_PATH`. Returns (strip, index of the first of the
    two vertices at the middle of the arc)."""
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_cylinder_add(vertices=64, radius=STRIP_RADIUS, depth=0.6, rotation=(math.pi / 2, 0.0, 0.0))
    bpy.ops.object.modifier_add(type="COLLISION")
    bpy.context.active_object.collision.cloth_friction = friction
    light, heavy = (round(side / STRIP_SPACING) for side in STRIP_SIDES)
    arc = round(math.pi * STRIP_PATH / STRIP_SPACING)
    path = [(-STRIP_PATH, -STRIP_SPACING * (light - k)) for k in range(light)]
    path += [(STRIP_PATH * math.sin(math.pi * (k / arc - 0.5)), STRIP_PATH * math.cos(math.pi * (k / arc - 0.5)))
             for k in range(arc + 1)]
    path += [(STRIP_PATH, -STRIP_SPACING * k) for k in range(1, heavy + 1)]
    verts = [(x, y, z) for x, z in path for y in (-STRIP_SPACING / 2, STRIP_SPACING / 2)]
    faces = [(2 * k, 2 * k + 1, 2 * k + 3, 2 * k + 2) for k in range(len(path) - 1)]
    mesh = bpy.data.meshes.new("strip")
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new("strip", mesh)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    return obj, 2 * (light + arc // 2)


def strip_angle(points, middle):
    """The angle (degrees) of the strip's middle (`points` (n, 3) of the strip, `middle` from
    `strip_scene`) from the cylinder's top, seen from its axis, positive toward the heavy side."""
    p = 0.5 * (points[middle] + points[middle + 1])
    return math.degrees(math.atan2(p[0], p[2]))


def strip_coulomb_mu():
    """The least Coulomb coefficient that holds the strip (tests/bench/capstan_vs_cloth.py
    derives it): with T the tension at the angle φ from the top toward the heavy side, ρ g its
    weight per length and r = `STRIP_PATH`, a strip about to slip toward its heavy side has
    dT/dφ = μ (T + ρ g r cos φ) − ρ g r sin φ (the normal force per length is T/r + ρ g cos φ)
    from T(−π/2) = ρ g × its light side, and it holds while T(π/2) ≤ ρ g × its heavy side.
    Integrated by the midpoint rule in 20,000 steps, and bisected on μ."""
    light, heavy = STRIP_SIDES
    r, n = STRIP_PATH, 20_000
    dphi = math.pi / n

    def held(mu):  # T(π/2)/(ρ g)
        t = light
        for k in range(n):
            phi = -math.pi / 2 + (k + 0.5) * dphi
            t += dphi * (mu * (t + r * math.cos(phi)) - r * math.sin(phi))
        return t

    lo, hi = 0.0, 2.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if held(mid) < heavy else (lo, mid)
    return 0.5 * (lo + hi)


def cloth_frames(obj, frames, **settings):
    """Blender's Cloth on `obj` (the active object) at its defaults but `settings` (of its
    `ClothSettings`), played through frames 1..`frames`: the evaluated vertex positions of each
    frame in the object's space, (frames, n, 3)."""
    bpy.ops.object.modifier_add(type="CLOTH")
    cloth = obj.modifiers["Cloth"]
    cloth.point_cache.frame_end = frames
    for name, value in settings.items():
        setattr(cloth.settings, name, value)
    coords = []
    for f in range(1, frames + 1):
        bpy.context.scene.frame_set(f)
        coords.append(evaluated_coords(obj))
    bpy.context.scene.frame_set(1)
    return np.array(coords)


def cloth_centroids(obj, frames):
    """Blender's Cloth on `obj` at its defaults, played through frames 1..`frames`: the world
    centroid of each frame, (frames, 3)."""
    return cloth_frames(obj, frames).mean(axis=1) + np.array(obj.location)
