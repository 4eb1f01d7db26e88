"""Where a bake's PC2 cache goes, and whether a file there may be written, without bpy.

- `default_path`: an empty Cache Path means `//cmsc_cache/<object>_<id>.pc2`, one file per object
  next to the saved .blend (`id` is random, stored on the object, so it survives renames and
  reloads and keeps two .blend files in one folder apart);
- `resolve`: a cache path as an absolute path; `//` (and a bare relative path) is relative to the
  saved .blend, never the working directory: on an unsaved file it is refused;
- `check_target`: the refusals that need no knowledge of other objects: a folder, a path under a
  file, a missing folder on an absolute path (an unplugged drive), an existing file that is not
  the object's own cache.

Every refusal is a `CacheFileError` whose message says what to do; nothing is written before.
"""

import os
import re

from .pc2 import SIGNATURE

#: The folder, next to the .blend, of the caches with a default path.
DEFAULT_FOLDER = "cmsc_cache"


class CacheFileError(Exception):
    """The bake refuses a cache path (the message says why and what to do); nothing was written."""


def file_stem(name):
    """`name` (an object's) as a portable file name: characters other than letters, digits,
    `.`, `-` and `_` become `_`."""
    stem = re.sub(r"[^\w.-]", "_", name).strip(".")
    return stem or "object"


def default_path(object_name, cache_id):
    """The default, blend-relative cache path of an object: `//cmsc_cache/<object>_<id>.pc2`."""
    return f"//{DEFAULT_FOLDER}/{file_stem(object_name)}_{cache_id}.pc2"


def check_typed(path, sep=os.sep):
    """Refuses (`CacheFileError`) a Cache Path as typed that this system (folders separated by
    `sep`) would take for another file than the artist means, with the path to write instead: a
    backslash where folders are separated by `/` (typed on Windows: a file named
    `caches\\cloth.pc2` beside the .blend, which the Mesh Cache modifier does not find), a
    Windows drive there (`D:/caches/`: a folder named `D:`), and a `~` home folder, which
    Blender does not expand (a folder named `~`)."""
    if sep == "/" and "\\" in path:
        raise CacheFileError(
            f"the Cache Path {path} has a backslash: on this computer folders are separated by /, "
            f"so write {path.replace(chr(92), '/')}"
        )
    if sep == "/" and re.match(r"[A-Za-z]:", path):
        raise CacheFileError(
            f"the Cache Path {path} names a Windows drive ({path[:2]}), which this computer does not have: "
            "give a path on this computer, or one relative to the .blend (//cmsc_cache/…)"
        )
    if path.startswith("~"):
        raise CacheFileError(
            f"the Cache Path {path} starts with ~, which Blender does not read as your home folder: "
            "give the whole path, or one relative to the .blend (//cmsc_cache/…)"
        )


def is_blend_relative(path):
    """Whether `path` is relative to the .blend: `//…`, or a bare relative path (which Blender
    would resolve against the working directory; the add-on never does)."""
    return path.startswith("//") or not os.path.isabs(path)


def resolve(path, blend_path):
    """The absolute, normalised form of cache path `path`; a relative one is relative to the
    folder of the saved .blend `blend_path` ("" when unsaved: refused)."""
    if not path:
        raise CacheFileError("the Cache Path is empty")
    if not is_blend_relative(path):
        return os.path.normpath(path)
    if not blend_path:
        raise CacheFileError(
            f"Save the .blend first: the cache path {path} is relative to it "
            "(or give an absolute Cache Path, or bake to Shape Keys)"
        )
    rel = path[2:] if path.startswith("//") else path
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(blend_path)), rel))


def same_file(a, b):
    """Whether paths `a` and `b` name the same file (links followed; neither need exist)."""
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def is_pc2(path):
    """Whether `path` is a readable file that starts like a PC2 cache."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SIGNATURE)) == SIGNATURE
    except OSError:
        return False


def check_target(path, own, make_folders):
    """Refuses (`CacheFileError`) to bake a new cache to absolute path `path` when it is a
    folder, lies under a file, lies in a missing folder and `make_folders` is false (an absolute
    path: a drive that is not connected, a typo), or is an existing file that is not `own` (the
    object's own earlier cache, a PC2 file: the caller says whether it recorded it)."""
    if os.path.isdir(path):
        raise CacheFileError(f"the cache path {path} is a folder: name a .pc2 file in it")
    if os.path.lexists(path):
        if not (own and is_pc2(path)):
            raise CacheFileError(
                f"{path} exists and is not a cache this object baked, so it was left untouched: "
                "choose another Cache Path (or delete that file yourself)"
            )
        return
    folder = os.path.dirname(path)
    existing = folder
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise CacheFileError(f"the cache path {path} cannot be made: {existing} is a file, not a folder")
    if existing != folder and not make_folders:
        raise CacheFileError(
            f"the folder of the cache path {path} does not exist (a drive that is not connected?): "
            "create it, or choose another Cache Path"
        )


def make_folder(path):
    """Creates the folder of cache `path` if missing; a failure is a CacheFileError."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise CacheFileError(f"cannot create the folder {folder} for the cache: {e.strerror or e}") from e


def same_blend(recorded, current, cache):
    """Whether a bake recorded as made by the .blend at `recorded` (its absolute path when it
    baked; "" for an unsaved file) belongs to the .blend at `current`; `cache` is the path the
    bake recorded, as stored ("" for a shape-key bake). The same path is the same file. A bake
    whose cache is relative to the .blend also stays its own when the .blend moved (the same file
    name, another folder) with its folder, so that the relative path now names another file, the
    moved cache; or alone, the recorded .blend gone. A Save As under another name
    (`shot_v02.blend` beside `shot_v01.blend`), or under the same name into a sibling folder
    while the relative path still names the first one's file (`//../caches/cloth.pc2`, a cache
    folder the shots share), is another file, whose bakes must never replace or delete the
    first one's. An unsaved file owns only what it baked while unsaved."""
    if recorded == current:
        return True
    if not recorded or not current:
        return False
    if same_file(recorded, current):
        return True
    if os.path.basename(recorded) != os.path.basename(current):
        return False
    if not cache:
        return True
    if not is_blend_relative(cache):
        return False
    moved_with_it = not same_file(resolve(cache, recorded), resolve(cache, current))
    return moved_with_it or not os.path.lexists(recorded)


def free_default_path(object_name, new_id, taken):
    """A default cache path for `object_name` whose file does not exist: ids from `new_id()`
    until `taken(path)` is false. Returns (path, id)."""
    for _ in range(1000):
        cache_id = new_id()
        path = default_path(object_name, cache_id)
        if not taken(path):
            return path, cache_id
    raise CacheFileError(f"no free default cache file for {object_name}: set a Cache Path")
