"""--native on interpreters whose eval loop has no name (stripped, LTO, Debian's 3.14).

From 3.11 on every eval-loop call keeps a record on its own C stack frame (the _PyCFrame on
3.11, the entry shim frame on 3.12+); hangscan finds the native eval-loop frames as the frames
whose stack range holds those records, so a symbol is not needed. Tested here:
  - pyenv 3.11, 3.12, 3.13 (shared libpython): tests/programs/py_hang.py runs twice, once as
    built and once over a copy of its libpython with every symbol stripped and the eval loop's
    dynamic symbol shrunk to one byte (so no frame can be named _PyEval_EvalFrameDefault). For every
    blocked thread the --native stacks are equal frame by frame: Python frames by function,
    file and line, native frames by module file name and offset (the stripped copy has no
    names and no inline frames, so inline frames are left out of both). With both unwinders,
    and from a core of the stripped run (`hangscan gcore`, then `hangscan core`, which always merges).
  - Debian's python3.14 in HS_PY314_ROOT (stripped; see docs/python-versions.md): every thread
    whose native unwind reaches its entry point merges and keeps the Python frames of the
    plain dump in order (the ctypes thread's unwind stops in the root's libffi, which has no
    CFI for its call trampoline: that thread is shown unmerged, with the reason).
"""

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import core_testlib as ct
import hs_testlib as lib
import test_python as tp
import test_python_state as tps

EVAL = b"_PyEval_EvalFrameDefault"


def pyenv_builds():
    out = []
    versions = tp.pyenv_root() / "versions"
    for minor in (11, 12, 13):
        builds = sorted(versions.glob("3.%d.*" % minor)) if versions.is_dir() else []
        builds = [b for b in builds if (b / "bin" / "python3").exists()]
        out.append(("pyenv-3.%d" % minor, builds[-1] if builds else None))
    return out


def shrink_dynamic_symbol(path: Path, name: bytes) -> None:
    """Sets the .dynsym size of `name` to 1 byte: the dynamic linker still finds it (it does
    not use st_size for functions), but no address inside the function is covered by it."""
    data = bytearray(path.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    hits = 0
    for sh in sections:
        if sh[1] != 11:   # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, = struct.unpack_from("<I", data, off)
            start = strtab[4] + st_name
            if data[start:start + len(name) + 1] == name + b"\0":
                struct.pack_into("<Q", data, off + 16, 1)
                hits += 1
    assert hits == 1, "%s: %d .dynsym entries named %s" % (path, hits, name)
    path.write_bytes(bytes(data))


def nameless_libpython(build: Path, minor: int, into: Path) -> Path:
    """A copy of the build's libpython with no .symtab and no symbol covering the eval loop's
    code (same addresses), in `into`, for LD_LIBRARY_PATH."""
    name = "libpython3.%d.so.1.0" % minor
    into.mkdir(parents=True, exist_ok=True)
    dest = into / name
    subprocess.run(["strip", "--strip-all", "-o", str(dest), str(build / "lib" / name)],
                   check=True, timeout=120)
    shrink_dynamic_symbol(dest, EVAL)
    return dest


def comparable(frames):
    """Python frames by (function, file, line); native frames by (module name, offset)."""
    out = []
    for f in frames:
        if f["kind"] == "python":
            out.append(("py", f["function"], f["file"], f["line"]))
        elif f["kind"] == "native":
            out.append(("native", os.path.basename(f["module"]), f["offset"]))
    return out


def blocked_stacks(proc, view, pid, cut_short=()):
    """{mark: comparable frames} for every blocked thread, and the main thread's as 'main'.
    Threads of the marks in `cut_short` may have an incomplete native unwind: left out."""
    out = {}
    for tid, v in list(view.items()) + [(pid, {"mark": "main"})]:
        t = tp.thread(proc, tid)
        if t["incomplete"] and v["mark"] in cut_short:
            continue
        assert not [n for n in t.get("notes", []) if "not merged" in n], (v["mark"], t["notes"])
        assert [f for f in t["frames"] if f["kind"] == "python"], v["mark"]
        out[v["mark"]] = comparable(t["frames"])
    return out


def start(pool, python, tmp, env=None):
    os.makedirs(tmp, exist_ok=True)
    view_path = os.path.join(tmp, "view.json")
    target = pool.start([python, str(tp.PY_HANG), lib.READY, view_path], timeout=90, env=env)
    with open(view_path) as fh:
        raw = __import__("json").load(fh)
    raw.pop("spin")
    return target, {int(k): v for k, v in raw.items()}


def native_dump(pid, unwinder=None):
    run = lib.dump(pid, "--native", unwinder=unwinder, timeout=180)
    assert run.rc == 0, run.describe()
    return lib.process_of(run.doc, pid)


@pytest.mark.parametrize("ident,build", pyenv_builds(), ids=[b[0] for b in pyenv_builds()])
def test_nameless_eval_loop_merges_like_the_named_one(ident, build, tmp_path):
    if build is None:
        pytest.skip("absent: no %s build under %s" % (ident, tp.pyenv_root() / "versions"))
    minor = int(ident.rsplit(".", 1)[1])
    python = str(build / "bin" / "python3")
    lib_dir = tmp_path / "lib"
    stripped = nameless_libpython(build, minor, lib_dir)
    env = dict(os.environ, LD_LIBRARY_PATH=str(lib_dir))
    with lib.TargetPool() as pool:
        named, named_view = start(pool, python, str(tmp_path / "a"))
        bare, bare_view = start(pool, python, str(tmp_path / "b"), env=env)
        assert str(stripped) in Path("/proc/%d/maps" % bare.pid).read_text()
        expected = blocked_stacks(native_dump(named.pid), named_view, named.pid)
        # The named run merged by address too; its eval loops had names to check against.
        for mark, frames in expected.items():
            assert len([f for f in frames if f[0] == "py"]) > 0, mark
        for unwinder in ("libdw", "libunwind"):
            got = blocked_stacks(native_dump(bare.pid, unwinder), bare_view, bare.pid)
            assert sorted(got) == sorted(expected)
            for mark in expected:
                assert got[mark] == expected[mark], "%s (%s)" % (mark, unwinder)
        # The same from a core of the stripped run.
        run = lib.run_hangscan(["gcore", "--pid", str(bare.pid), "-o", str(tmp_path), "--json"],
                               timeout=300)
        assert run.rc == 0, run.describe()
        core = ct.hangscan_core([run.doc["path"]], timeout=180)   # cores always merge
        assert core.rc == 0, core.describe()
        got = blocked_stacks(ct.only_process(core.doc), bare_view, bare.pid)
        for mark in expected:
            assert got[mark] == expected[mark], "%s (core)" % mark
        os.unlink(run.doc["path"])


def test_debian_314_merges_without_symbols(tmp_path):
    ident, python, reason = tps.sid_interpreter()
    if python is None:
        pytest.skip("absent: " + reason)
    root = tps.SID_ROOT
    inner = "/hs-py-stripped"
    os.makedirs(root + inner, exist_ok=True)
    shutil.copy(str(tp.PY_HANG), root + inner)
    view_inner = "/tmp/hs-stripped-view-%d.json" % os.getpid()
    with lib.TargetPool() as pool:
        target = pool.start(["chroot", root, python, inner + "/py_hang.py", lib.READY, view_inner],
                            timeout=90)
        with open(root + view_inner) as fh:
            raw = __import__("json").load(fh)
        raw.pop("spin")
        view = {int(k): v for k, v in raw.items()}
        plain = lib.dump(target.pid, timeout=180)
        assert plain.rc == 0, plain.describe()
        plain_proc = lib.process_of(plain.doc, target.pid)
        for unwinder in ("libdw", "libunwind"):
            proc = native_dump(target.pid, unwinder)
            stacks = blocked_stacks(proc, view, target.pid, cut_short=("ctypes_pause",))
            assert len(stacks) >= len(view), sorted(stacks)
            for tid, v in list(view.items()) + [(target.pid, {"mark": "main"})]:
                if v["mark"] not in stacks:
                    continue
                py = [f[1:] for f in stacks[v["mark"]] if f[0] == "py"]
                expected = [(f["function"], f["file"], f["line"])
                            for f in tp.thread(plain_proc, tid)["frames"]]
                assert py == expected, "%s (%s)" % (v["mark"], unwinder)
        os.unlink(root + view_inner)
