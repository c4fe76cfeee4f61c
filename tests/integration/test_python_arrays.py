"""numpy arrays and scalars (and torch tensors) in --locals, read from memory, against what
numpy and torch print themselves.

tests/programs/py_arrays.py (Debian's python3.11 with python3-numpy, and python3-torch when
installed) blocks in arrays_frame() after writing, for each local, the rendering expected from
the library's own view (shape, dtype.name, str() of every element in C order, device). Arrays:
float64 2-D, int64 with a value past 2**32, float32 (shortest float32 digits), bool, a strided
column view, a transposed int32 array, 1000 uint16 (cut after 10), a 0-d int8, an empty 2-D
array, a str array (shape and dtype only); scalars numpy.int64/float32/float64/bool_/uint8.
Tensors (python3-torch): float32 2-D, int64, a slice (storage offset and strides), a 6-D int16
tensor (sizes kept out of line), an nn.Parameter of float64 and a bool tensor, rendered with
shape, dtype and device as torch prints them.
Live and from a core written by `hangscan gcore`.
"""

import importlib.util
import json
import os

import pytest

import core_testlib as ct
import hs_testlib as lib

PYTHON = "/usr/bin/python3"
PROGRAM = lib.program_source("py_arrays.py")
NUMPY_NAMES = ["grid", "steps", "small", "flags", "column", "transposed", "long_one", "zero_d",
               "empty", "words", "counter", "ratio", "exact", "truth", "byte"]


TORCH_NAMES = ["weights", "index", "sliced", "deep", "param", "flags_t"]


def has(module):
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    if not has("numpy"):
        pytest.fail("python3-numpy is not installed (tools/deps.sh test installs it)")
    tmp = tmp_path_factory.mktemp("arrays")
    view_path = os.path.join(str(tmp), "view.json")
    with lib.TargetPool() as pool:
        target = pool.start([PYTHON, str(PROGRAM), lib.READY, view_path], timeout=120)
        with open(view_path) as fh:
            view = json.load(fh)
        yield target, view, tmp


def rendered(proc, pid):
    thread = next(t for t in proc["threads"] if t["tid"] == pid)
    frame = next(f for f in thread["frames"] if f.get("function") == "arrays_frame")
    return {l["name"]: l["value"] for l in frame["locals"]}


def check(got, view, names):
    want = dict(view)
    assert [n for n in names if n in want] == names
    for name in names:
        assert got[name] == want[name], name


def test_numpy_values_equal_numpys_own_view(arrays):
    target, view, _ = arrays
    run = lib.dump(target.pid, "--locals", timeout=180)
    assert run.rc == 0, run.describe()
    got = rendered(lib.process_of(run.doc, target.pid), target.pid)
    check(got, view, NUMPY_NAMES)
    assert got["grid"] == ("numpy.ndarray(shape=(2, 3), dtype=float64, "
                           "data=[0.0, 0.25, 0.5, 0.75, 1.0, 1.25])")
    assert got["small"] == "numpy.ndarray(shape=(3,), dtype=float32, data=[0.1, 1e+20, -2.5])"
    assert got["counter"] == "numpy.int64(-17)"


def test_numpy_values_from_a_core(arrays):
    target, view, tmp = arrays
    run = lib.run_hangscan(["gcore", "--pid", str(target.pid), "-o", str(tmp), "--json"],
                           timeout=300)
    assert run.rc == 0, run.describe()
    core = ct.hangscan_core([run.doc["path"]], "--locals", timeout=180)
    assert core.rc == 0, core.describe()
    got = rendered(ct.only_process(core.doc), target.pid)
    check(got, view, NUMPY_NAMES)
    if has("torch"):
        check(got, view, TORCH_NAMES)
    os.unlink(run.doc["path"])


def test_torch_tensors_equal_torchs_own_view(arrays):
    if not has("torch"):
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")
    target, view, _ = arrays
    run = lib.dump(target.pid, "--locals", "--verbose", timeout=180)
    assert run.rc == 0, run.describe()
    got = rendered(lib.process_of(run.doc, target.pid), target.pid)
    check(got, view, TORCH_NAMES)
    assert got["index"] == "torch.Tensor(shape=(3,), dtype=int64, device=cpu, data=[5, -6, 7])"
    assert got["sliced"] == ("torch.Tensor(shape=(2, 2), dtype=float32, device=cpu, "
                             "data=[0.5, 0.75, 1.0, 1.25])")
    assert "tensors read" in run.stderr, run.stderr
