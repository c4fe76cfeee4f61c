"""Helpers for the `hangscan core` tests: making real cores and reading the JSON about them.

Why: every core test needs the same few things -- kernel.core_pattern pointed into a private
directory (and restored, whatever happens), RLIMIT_CORE raised for the crashing process only,
a program run until it dies of the expected signal, or a live process dumped with gcore while
it keeps running. The tests that use this run under ctest's RESOURCE_LOCK "core_pattern"
(every tests/integration/test_core*.py), since the pattern is global to the machine; when
HS_CORE_PATTERN_LOCK names a file, CoreDir also holds an flock on it while the pattern is
changed (for test runs beside this one on the same machine: tools/fresh-machine.sh's root).

Main entry points:
  CoreDir()                          context manager: private dir + core_pattern + restore
  CoreDir.crash(argv, sig, env)      run a program that says "ready" on fd 1 and dies of sig
  CoreDir.kill_for_core(target, sig) a live TargetPool target killed by sig, its core
  gcore(pid, out_prefix)             gdb's gcore of a live process (it keeps running)
  hangscan_core(paths, *extra)       `hangscan core ... --json`
  python_frames(thread)              [(function, file, line)] of a thread's Python frames
"""

from __future__ import annotations

import fcntl
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import hs_testlib

CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")


def _unlimited_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def wait_for_core(path: Path, timeout: float = 60.0) -> Path:
    """The kernel has written the core by the time the process is reaped; this only guards
    against a pattern that pipes to a helper."""
    hs_testlib.wait_for(lambda: path.exists() and path.stat().st_size > 0, timeout,
                        f"core file {path}")
    return path


class CoreDir:
    """A private directory that receives kernel cores while the context is active."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="hs-cores-")
        self.path = Path(self.tmp.name)
        self._old_pattern: Optional[str] = None
        self._lock = None

    def __enter__(self) -> "CoreDir":
        if os.environ.get("HS_CORE_PATTERN_LOCK"):
            self._lock = open(os.environ["HS_CORE_PATTERN_LOCK"], "a")
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._old_pattern = CORE_PATTERN.read_text().rstrip("\n")
        CORE_PATTERN.write_text(f"{self.path}/core.%p\n")
        return self

    def __exit__(self, *exc) -> None:
        if self._old_pattern is not None:
            CORE_PATTERN.write_text(self._old_pattern + "\n")
        if self._lock is not None:
            self._lock.close()
        self.tmp.cleanup()

    def core_of(self, pid: int) -> Path:
        return self.path / f"core.{pid}"

    def crash(self, argv: Sequence[str], sig: int, env: Optional[dict] = None,
              timeout: float = 60.0) -> tuple[Path, int]:
        """Runs argv (which must say "ready" on fd 1) until it dies of `sig`; returns the
        core and the pid. Fails when it exits otherwise."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        proc = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_unlimited_core, env=full_env,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"{argv} did not crash within {timeout} s")
        assert b"ready" in out, f"{argv} never said ready; stderr: {err[-2000:]!r}"
        assert proc.returncode == -sig, (f"{argv} exited with {proc.returncode}, expected "
                                         f"signal {sig}; stderr: {err[-2000:]!r}")
        return wait_for_core(self.core_of(proc.pid)), proc.pid

    def kill_for_core(self, target: "hs_testlib.Target", sig: int = signal.SIGSEGV) -> Path:
        """Kills a running target with `sig` after raising its core limit; its core."""
        resource.prlimit(target.pid, resource.RLIMIT_CORE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        os.kill(target.pid, sig)
        target.proc.wait(timeout=60)
        assert target.proc.returncode == -sig, f"target exited with {target.proc.returncode}"
        return wait_for_core(self.core_of(target.pid))


def gcore(pid: int, out_prefix: Path, timeout: float = 120.0) -> Path:
    """gdb's gcore: a core of a live process, which keeps running."""
    gdb = shutil.which("gcore")
    assert gdb, "gcore (package gdb) is needed"
    proc = subprocess.run([gdb, "-o", str(out_prefix), str(pid)], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    path = Path(f"{out_prefix}.{pid}")
    assert proc.returncode == 0 and path.exists(), (
        f"gcore failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    return path


def hangscan_core(paths: Sequence, *extra: str, as_json: bool = True,
                  timeout: float = 120.0) -> hs_testlib.HsRun:
    args = ["core"] + [str(p) for p in paths] + list(extra)
    if as_json:
        args.append("--json")
    return hs_testlib.run_hangscan(args, timeout=timeout)


def only_process(doc: dict) -> dict:
    procs = doc["processes"]
    assert len(procs) == 1, f"expected one process, got {[p.get('pid') for p in procs]}"
    return procs[0]


def thread_by_tid(proc: dict, tid: int) -> dict:
    hits = [t for t in proc["threads"] if t["tid"] == tid]
    assert len(hits) == 1, f"tid {tid} not in {[t['tid'] for t in proc['threads']]}"
    return hits[0]


def crashed_thread(proc: dict) -> dict:
    hits = [t for t in proc["threads"] if t.get("crashed")]
    assert len(hits) == 1, f"expected one crashed thread, got {[t['tid'] for t in hits]}"
    assert hits[0]["tid"] == proc["crashed_tid"]
    return hits[0]


def python_frames(thread: dict) -> list[tuple[str, str, int]]:
    return [(f["function"], f["file"], f["line"]) for f in thread["frames"]
            if f["kind"] == "python"]


def native_functions(thread: dict) -> list[str]:
    return [f["function"] for f in thread["frames"] if f["kind"] in ("native", "inline")]


def corrupt_copy(src: Path, dst: Path, edits: dict[int, bytes] | None = None,
                 length: Optional[int] = None) -> Path:
    """A copy of a core, cut to `length` bytes and/or with bytes replaced at offsets."""
    data = bytearray(src.read_bytes())
    if length is not None:
        data = data[:length]
    for off, b in (edits or {}).items():
        data[off:off + len(b)] = b
    dst.write_bytes(bytes(data))
    return dst


def elf_note_offset(core: Path) -> tuple[int, int]:
    """(offset, size) of the core's first PT_NOTE segment."""
    data = core.read_bytes()[:1 << 20]
    phoff = int.from_bytes(data[32:40], "little")
    phentsize = int.from_bytes(data[54:56], "little")
    phnum = int.from_bytes(data[56:58], "little")
    for i in range(phnum):
        ph = data[phoff + i * phentsize: phoff + (i + 1) * phentsize]
        if int.from_bytes(ph[0:4], "little") == 4:  # PT_NOTE
            return int.from_bytes(ph[8:16], "little"), int.from_bytes(ph[32:40], "little")
    raise AssertionError(f"{core}: no PT_NOTE")

