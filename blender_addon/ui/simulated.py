"""Which objects cmsc simulates: the one predicate the bake, the live preview, the fit, the
settings' callbacks, the outdated-bake watch and the cache use (a leaf module: it imports no
other part of the add-on)."""


def is_simulated(obj):
    """Whether `obj` is simulated: a mesh object with the simulation enabled."""
    return obj is not None and obj.type == "MESH" and obj.cmsc.enabled


def simulated_objects(scene):
    """The simulated objects of `scene`, in scene order (none without a scene)."""
    return [o for o in scene.objects if is_simulated(o)] if scene is not None else []
