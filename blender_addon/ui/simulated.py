"""Which objects cmsc simulates: the one predicate the bake, the live preview, the fit, the
settings' callbacks, the outdated-bake watch and the cache use (a leaf module: it imports no
other part of the add-on)."""


def is_simulated(obj):
    """Whether `obj` is simulated: a mesh object of this file with the simulation enabled. One
    linked from a library (not a library override) plays the library's own bake: this file
    cannot keep a cache modifier or a record on it (`linked_simulated`)."""
    return obj is not None and obj.type == "MESH" and obj.cmsc.enabled and obj.library is None


def linked_simulated(scene):
    """The objects of `scene` simulated in the library they are linked from, which this file's
    bakes leave out (`is_simulated`)."""
    if scene is None:
        return []
    return [o for o in scene.objects if o.type == "MESH" and o.cmsc.enabled and o.library is not None]


def simulated_objects(scene):
    """The simulated objects of `scene`, in scene order (none without a scene)."""
    return [o for o in scene.objects if is_simulated(o)] if scene is not None else []
