"""The add-on's Python mirrors of the C ABI equal include/cmsc.h (issue 26): status codes and
their exceptions, the CmscCoulomb, CmscIntegrator and CmscFrictionLaw values, CmscParams's and CmscEnergies's
fields (names, order, C types), every declared function's argument count and return type, and
the limits and AUTO thresholds the header exports (the copies in `sim/params.py`, and the
bounds and tooltip of `ui/properties.py`, read as source without Blender)."""

import ast
import ctypes
import os
import re

import pytest

from sim import _native, params
from sim.errors import BY_STATUS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEADER = os.path.join(ROOT, "include", "cmsc.h")
PROPERTIES = os.path.join(ROOT, "blender_addon", "ui", "properties.py")


def _code(text):
    """The header without comments."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@pytest.fixture(scope="module")
def header():
    with open(HEADER, encoding="utf-8") as f:
        return _code(f.read())


def enum(header, name):
    """`{member: value}` of `typedef enum { ... } name;`."""
    body = re.search(r"typedef enum\s*\{([^}]*)\}\s*" + name + r"\s*;", header).group(1)
    return {m: int(v) for m, v in re.findall(r"(\w+)\s*=\s*(\d+)", body)}


def struct(header, name):
    """`[(field, C type, array length or None)]` of `typedef struct { ... } name;`, in order."""
    body = re.search(r"typedef struct\s*\{([^}]*)\}\s*" + name + r"\s*;", header).group(1)
    fields = re.findall(r"(\w+)\s+(\w+)\s*(?:\[(\d+)\])?\s*;", body)
    return [(f, t, int(n) if n else None) for t, f, n in fields]


def functions(header):
    """`{name: (return type, [argument declarations])}` of every `cmsc_*` function."""
    out = {}
    for ret, name, args in re.findall(r"^([A-Za-z][\w \*]*?)\s*\b(cmsc_\w+)\s*\(([^)]*)\)\s*;", header, re.M):
        args = [a.strip() for a in args.split(",") if a.strip()]
        out[name] = (" ".join(ret.split()), [] if args == ["void"] else args)
    return out


def defines(header):
    """The header's integer constants; `UINT32_MAX` (a threshold never reached) as its value."""
    found = re.findall(r"#define\s+(CMSC_\w+)\s+(\d+|UINT32_MAX)\s*$", header, re.M)
    return {k: 2**32 - 1 if v == "UINT32_MAX" else int(v) for k, v in found}


def _camel(upper):
    return "".join(part.capitalize() for part in upper.split("_"))


C_TYPES = {"double": ctypes.c_double, "uint32_t": ctypes.c_uint32, "int32_t": ctypes.c_int32, "size_t": ctypes.c_size_t}
RETURNS = {"CmscStatus": ctypes.c_int, "void": None, "const char *": ctypes.c_char_p, "uint32_t": ctypes.c_uint32}


def test_status_codes_have_their_exceptions(header):
    statuses = enum(header, "CmscStatus")
    assert statuses.pop("CMSC_OK") == 0
    python = {value: cls.__name__ for value, cls in BY_STATUS.items()}
    assert python == {value: _camel(name[len("CMSC_") :]) + "Error" for name, value in statuses.items()}


@pytest.mark.parametrize(
    ("c_name", "python_enum"),
    [
        ("CmscCoulomb", params.CoulombMethod),
        ("CmscIntegrator", params.Integrator),
        ("CmscFrictionLaw", params.FrictionLaw),
    ],
)
def test_enum_values(header, c_name, python_enum):
    prefix = {
        "CmscCoulomb": "CMSC_COULOMB_",
        "CmscIntegrator": "CMSC_INTEGRATOR_",
        "CmscFrictionLaw": "CMSC_FRICTION_",
    }[c_name]
    c_values = {name[len(prefix) :]: value for name, value in enum(header, c_name).items()}
    assert {m.name: m.value for m in python_enum} == c_values


@pytest.mark.parametrize(
    ("c_name", "mirror"), [("CmscParams", _native.CmscParams), ("CmscEnergies", _native.CmscEnergies)]
)
def test_struct_fields_names_order_and_types(header, c_name, mirror):
    def python_field(name, t):
        if isinstance(t, type) and issubclass(t, ctypes.Array):
            return (name, t._type_, t._length_)
        return (name, t, None)

    c_fields = [(f, C_TYPES[t], n) for f, t, n in struct(header, c_name)]
    assert [python_field(*f) for f in mirror._fields_] == c_fields


def test_every_function_has_its_argument_count_and_return_type(header):
    declared = functions(header)
    assert "cmsc_create" in declared and "cmsc_last_error" in declared  # the parser sees them
    missing = sorted(set(_native.SIGNATURES) - set(declared))
    assert not missing, f"the add-on declares functions the header lacks: {missing}"
    for name, (restype, argtypes) in _native.SIGNATURES.items():
        ret, args = declared[name]
        assert len(argtypes) == len(args), f"{name}: {len(argtypes)} ctypes arguments, header {args}"
        assert restype is RETURNS[ret], f"{name}: returns {ret} in the header, {restype} in ctypes"


def test_limits_equal_the_headers(header):
    d = defines(header)
    assert (params.MAX_ITERATIONS, params.MAX_FAR_FIELD_INTERVAL, params.MAX_GRID_POINTS) == (
        d["CMSC_MAX_ITERATIONS"],
        d["CMSC_MAX_FAR_FIELD_INTERVAL"],
        d["CMSC_MAX_GRID_POINTS"],
    )
    real = dict(re.findall(r"#define\s+(CMSC_\w+)\s+([0-9.eE+-]+)\s*$", header, re.M))
    assert (params.MIN_FIELD_TOLERANCE, params.MAX_FIELD_TOLERANCE, params.ADAPTIVE_ITERATION_TOLERANCE) == (
        float(real["CMSC_MIN_FIELD_TOLERANCE"]),
        float(real["CMSC_MAX_FIELD_TOLERANCE"]),
        float(real["CMSC_RECOMMENDED_ITERATION_TOLERANCE"]),
    )


def test_advance_limit_equals_the_headers(header):
    assert params.MAX_ADVANCE_STEPS == defines(header)["CMSC_MAX_ADVANCE_STEPS"]
    # a frame's steps go to the library in one call per substep: Max Substeps never passes it
    assert params.MAX_SUBSTEPS <= params.MAX_ADVANCE_STEPS


def _properties():
    """`{property name: [keywords of each IntProperty/EnumProperty declaring it]}` in
    ui/properties.py, with literal keyword values."""
    with open(PROPERTIES, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = {}
    for node in ast.walk(tree):
        declared = isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        if declared and isinstance(node.annotation, ast.Call):
            keywords = {}
            for k in node.annotation.keywords:
                try:
                    keywords[k.arg] = ast.literal_eval(k.value)
                except ValueError:
                    continue
            found.setdefault(node.target.id, []).append(keywords)
    return found


def test_the_panels_bounds_and_auto_tooltip_agree_with_the_header(header):
    d, props = defines(header), _properties()
    assert [p["max"] for p in props["grid_points"]] == [d["CMSC_MAX_GRID_POINTS"]]
    assert [p["max"] for p in props["far_field_interval"]] == [d["CMSC_MAX_FAR_FIELD_INTERVAL"]]
    # the panel may offer fewer iterations than the library accepts, never more
    assert all(p["max"] <= d["CMSC_MAX_ITERATIONS"] for p in props["iterations"])
    (coulomb,) = props["coulomb_method"]
    (auto,) = [item[2] for item in coulomb["items"] if item[0] == "AUTO"]
    for name in ("CMSC_AUTO_P3M_MIN_VERTICES", "CMSC_AUTO_GPU_MIN_VERTICES", "CMSC_AUTO_GPU_P3M_MIN_VERTICES"):
        assert f"{d[name]:,}" in auto, f"the AUTO tooltip does not give {name} = {d[name]:,}: {auto!r}"
    # Auto never runs DDEF on the GPU (UINT32_MAX), so the tooltip must not say it does
    assert d["CMSC_AUTO_GPU_DDEF_MIN_VERTICES"] == 2**32 - 1
    assert "DDEF" not in auto, auto
