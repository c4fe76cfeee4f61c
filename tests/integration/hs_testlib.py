"""Shared helpers for hangscan's integration tests (pytest).

Why: every integration test does the same few things -- start a real target process, wait
until it says "ready" (never sleep and hope), run hangscan on it, parse the JSON, look at
/proc, and kill everything it started. Doing them one way keeps tests short and makes
cleanup certain. Other test directories import this module too (tests/integration is on
sys.path for pytest through conftest.py; elsewhere: sys.path.insert(0, .../tests/integration)).

Main entry points:
  program(name) -> str                       path of a built tests/programs/ target
  hs_line(source, tag) -> int                line of "HS-LINE: tag" in tests/programs/<source>
  TargetPool.start(argv, ...) -> Target      start a target, wait for "ready" (deadline)
  TargetPool.close()                         kill every process group the pool started
  run_hangscan(args, ...) -> HsRun           run the hangscan binary (deadline), JSON parsed
  dump(pid, ...) -> HsRun                    `hangscan dump --pid P --json [...]`
  thread_states(pid) / assert_runs_on(pid)   /proc checks for "never harm the target"
  process_of / thread_named / frames_of / find_frame   JSON navigation
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterable, Optional, Sequence

import pytest

READY = "{ready}"  # placeholder in argv replaced by the ready fd number or FIFO path
NOBODY = 65534


def source_dir() -> Path:
    env = os.environ.get("HS_SOURCE_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    env = os.environ.get("HS_BUILD_DIR")
    return Path(env) if env else source_dir() / "build"


def hangscan_bin() -> str:
    return os.environ.get("HANGSCAN_BIN") or str(build_dir() / "hangscan")


def program(name: str) -> str:
    path = (build_dir() / "programs" / name).resolve()
    if not path.exists():
        raise FileNotFoundError(f"target program {path} is not built (target test_programs)")
    return str(path)


def program_source(source: str) -> Path:
    return source_dir() / "tests" / "programs" / source


def hs_line(source: str, tag: str) -> int:
    """Line number (1-based) of the `HS-LINE: tag` marker in tests/programs/<source>."""
    pattern = re.compile(r"HS-LINE:\s*" + re.escape(tag) + r"(\s|\*/|$)")
    hits = [i for i, text in enumerate(program_source(source).read_text().splitlines(), 1)
            if pattern.search(text)]
    if len(hits) != 1:
        raise LookupError(f"HS-LINE: {tag} occurs {len(hits)} times in {source}")
    return hits[0]


def build_id(path: str) -> str:
    """GNU build-id of an ELF file, hex, read from its notes (no tools needed)."""
    data = Path(path).read_bytes()
    idx = data.find(b"GNU\x00", 0)
    while idx >= 0:
        # Note header: namesz(4) descsz(4) type(4) name("GNU\0"); type 3 is NT_GNU_BUILD_ID.
        hdr = idx - 12
        if hdr >= 0:
            namesz, descsz, ntype = (int.from_bytes(data[hdr + k:hdr + k + 4], "little")
                                     for k in (0, 4, 8))
            if namesz == 4 and ntype == 3 and 8 <= descsz <= 64:
                return data[idx + 4:idx + 4 + descsz].hex()
        idx = data.find(b"GNU\x00", idx + 1)
    raise LookupError(f"no build-id note in {path}")


# ---------------------------------------------------------------------------------------
# /proc

def read_text(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def tids(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def stat_state(path: str) -> Optional[str]:
    text = read_text(path)
    if not text:
        return None
    # The comm field may contain spaces and parentheses: the state follows the last ')'.
    return text[text.rfind(")") + 2:].split(" ", 1)[0]


def process_state(pid: int) -> Optional[str]:
    return stat_state(f"/proc/{pid}/stat")


def thread_states(pid: int) -> dict[int, str]:
    """tid -> state letter for every thread still listed (threads that vanish are skipped)."""
    out = {}
    for tid in tids(pid):
        state = stat_state(f"/proc/{pid}/task/{tid}/stat")
        if state:
            out[tid] = state
    return out


def thread_syscall(pid: int, tid: int) -> Optional[str]:
    text = read_text(f"/proc/{pid}/task/{tid}/syscall")
    return text.split()[0] if text else None


def tracer_pid(pid: int, tid: Optional[int] = None) -> int:
    """TracerPid of a process (or of one of its threads): 0 when nobody traces it."""
    path = f"/proc/{pid}/status" if tid is None else f"/proc/{pid}/task/{tid}/status"
    for line in (read_text(path) or "").splitlines():
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    return 0


def load_bias(pid: int, module: str) -> Optional[int]:
    """Lowest start address of `module`'s mappings in pid (the PIE load bias)."""
    starts = []
    for line in (read_text(f"/proc/{pid}/maps") or "").splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5] == module:
            starts.append(int(parts[0].split("-")[0], 16) - int(parts[2], 16))
    return min(starts) if starts else None


def children(pid: int) -> list[int]:
    """Pids whose parent is pid, sorted (from /proc/*/stat)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            text = read_text(f"/proc/{name}/stat") or ""
            fields = text[text.rfind(")") + 2:].split()
            if len(fields) > 1 and fields[1] == str(pid):
                out.append(int(name))
    return sorted(out)


def cmdline(pid: int) -> list[str]:
    return (read_text(f"/proc/{pid}/cmdline") or "").rstrip("\0").split("\0")


def wait_for(predicate, timeout: float, what: str, interval: float = 0.005):
    """Polls predicate() until it returns a true value or the deadline passes (then fails)."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def bpf_programs() -> dict[int, str]:
    """{id: name} of every BPF program loaded now (the whole machine's: other tests may load and
    free their own meanwhile; bpftool here does not say which process holds one)."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True)
    return {p["id"]: p.get("name", "") for p in json.loads(out.stdout or "[]")}


def bpf_programs_since(before: dict[int, str], name: str) -> list[int]:
    """Ids of the programs called `name` loaded now and not in `before`."""
    return sorted(i for i, n in bpf_programs().items() if i not in before and n == name)


def assert_none_stays(before: dict[int, str], name: str):
    """No program called `name` loaded since `before` stays loaded: what a hangscan run must never
    leave. Another test's run may hold its own at this moment (every dump loads the snapshot
    program; ctest runs tests side by side): that one is freed when its run ends, while one a
    run left behind never is. So the ids seen now must be gone within 30 s."""
    seen = set(bpf_programs_since(before, name))
    wait_for(lambda: not seen & set(bpf_programs()), 30, f"the {name} programs {sorted(seen)} to be freed",
             interval=0.05)


def stopped_threads(pid: int) -> dict[int, str]:
    return {t: s for t, s in thread_states(pid).items() if s in ("t", "T")}


def assert_runs_on(pid: int, settle: float = 1.0, clean_for: float = 0.05) -> None:
    """The target is alive, not a zombie, not traced, and no thread is stopped (t/T).

    A thread may be seen in 't' for an instant while the kernel detaches a dead tracer, and
    a stop that is on its way may not show yet: the threads must be seen running (no t/T)
    continuously for `clean_for` seconds, within `settle` seconds.
    """
    end = time.monotonic() + settle
    clean_since = None
    while True:
        state = process_state(pid)
        assert state is not None, f"target {pid} is gone"
        assert state not in ("Z", "X"), f"target {pid} died (state {state})"
        stopped = stopped_threads(pid)
        now = time.monotonic()
        if stopped:
            clean_since = None
        elif clean_since is None:
            clean_since = now
        if clean_since is not None and now - clean_since >= clean_for:
            break
        if now > end:
            raise AssertionError(f"target {pid} left with stopped threads: {stopped}")
        time.sleep(0.005)
    assert tracer_pid(pid) == 0, f"target {pid} still traced by {tracer_pid(pid)}"


def cpu_ticks(pid: int, tid: int) -> int:
    text = read_text(f"/proc/{pid}/task/{tid}/stat") or ""
    fields = text[text.rfind(")") + 2:].split()
    return int(fields[11]) + int(fields[12]) if len(fields) > 12 else -1


# ---------------------------------------------------------------------------------------
# Targets

class TargetError(RuntimeError):
    pass


@dataclasses.dataclass
class Target:
    """A started target process (the leader of its own process group)."""
    argv: list[str]
    proc: subprocess.Popen
    stderr_path: str

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        return read_text(self.stderr_path) or ""

    def tids(self) -> list[int]:
        return tids(self.pid)

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 10.0) -> None:
        """Kills the whole process group while the leader is still unreaped (so the pgid
        cannot have been reused), then reaps the leader."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=timeout)


def readable_by_all(path: str) -> bool:
    """Every directory above `path` is searchable and the file readable+executable by others."""
    p = Path(path).resolve()
    if p.stat().st_mode & 0o005 != 0o005:
        return False
    return all(d.stat().st_mode & 0o001 for d in p.parents)


def user_prefix(uid: Optional[int]) -> list[str]:
    """argv prefix that runs a command as an unprivileged uid with no groups (like a new user)."""
    if uid is None:
        return []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


class TargetPool:
    """Starts targets and guarantees they are killed (process group) when closed."""

    def __init__(self) -> None:
        self.targets: list[Target] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="hs-targets-")
        os.chmod(self._tmp.name, 0o755)  # targets run as another uid must reach their FIFO

    def start(self, argv: Sequence[str], *, ready: Optional[str] = "pipe", ready_at: int = 1,
              timeout: float = 30.0, main_parked: bool = True, uid: Optional[int] = None,
              env: Optional[dict] = None, cwd: Optional[str] = None) -> Target:
        """Starts argv in a new session and waits for it to write "ready\\n".

        ready: "pipe" (an inherited fd), "fifo" (a FIFO path, for launchers that do not
        pass fds on) or None (no handshake). The fd number / path replaces a READY item in
        argv, or is inserted at argv[ready_at]. main_parked: after "ready", also wait until
        the main thread sleeps in a syscall (programs say ready just before they block).
        """
        argv = [str(a) for a in argv]
        read_fd = write_fd = None
        fifo = None
        pass_fds: tuple[int, ...] = ()
        if ready == "pipe":
            read_fd, write_fd = os.pipe()
            os.set_inheritable(write_fd, True)
            token = str(write_fd)
            pass_fds = (write_fd,)
        elif ready == "fifo":
            fifo = os.path.join(self._tmp.name, f"ready-{len(self.targets)}")
            os.mkfifo(fifo, 0o666)
            os.chmod(fifo, 0o666)
            # O_RDWR: opening never blocks and reads never see EOF before the writer comes.
            read_fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
            token = fifo
        elif ready is not None:
            raise ValueError(f"ready must be 'pipe', 'fifo' or None, not {ready!r}")
        if ready is not None:
            if READY in argv:
                argv = [token if a == READY else a for a in argv]
            else:
                argv.insert(ready_at, token)
        argv = user_prefix(uid) + argv
        stderr_path = os.path.join(self._tmp.name, f"stderr-{len(self.targets)}")
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, pass_fds=pass_fds, start_new_session=True,
                                    env=env, cwd=cwd)
        target = Target(argv, proc, stderr_path)
        self.targets.append(target)
        if write_fd is not None:
            os.close(write_fd)
        if read_fd is not None:
            try:
                self._wait_ready(target, read_fd, timeout)
            finally:
                os.close(read_fd)
        if main_parked:
            wait_for(lambda: target.alive() and thread_syscall(target.pid, target.pid)
                     not in (None, "running"), timeout, f"main thread of {argv[0]} to block")
        return target

    @staticmethod
    def _wait_ready(target: Target, fd: int, timeout: float) -> None:
        end = time.monotonic() + timeout
        buf = b""
        while b"ready\n" not in buf:
            left = end - time.monotonic()
            if left <= 0 or not target.alive():
                target.kill()
                why = "timed out" if left <= 0 else f"exited with {target.proc.returncode}"
                raise TargetError(f"{target.argv}: {why} before saying ready; stderr: "
                                  f"{target.stderr()[-2000:]!r}")
            r, _, _ = select.select([fd], [], [], min(left, 0.1))
            if r:
                try:
                    chunk = os.read(fd, 256)
                except BlockingIOError:
                    continue
                if not chunk and not target.alive():
                    continue  # EOF: the loop reports the exit
                buf += chunk

    def public_copy(self, path: str) -> str:
        """`path` itself when any user can execute it, else a copy in the pool's 0755 temp
        dir (a build tree under /root is out of reach of a test run as another user)."""
        if readable_by_all(path):
            return path
        dest = os.path.join(self._tmp.name, os.path.basename(path))
        if not os.path.exists(dest):
            shutil.copy2(path, dest)
            os.chmod(dest, 0o755)
        return dest

    def close(self) -> None:
        groups = {target.pid for target in self.targets}
        for target in reversed(self.targets):
            target.kill()
        self.targets.clear()
        self._tmp.cleanup()
        forget_since_state(groups)

    def __enter__(self) -> "TargetPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


SINCE_STATE_DIR = "/run/hangscan/since"  # where a root dump keeps since-when (proc/since_state.h)


def forget_since_state(groups: set[int]) -> None:
    """Removes the since-when records a dump left of processes that are gone or in one of the
    killed process `groups` (each target leads its own session)."""
    try:
        names = os.listdir(SINCE_STATE_DIR)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"(\d+)-(\d+)\.since", name)
        if not m:
            continue
        try:
            with open(f"/proc/{m.group(1)}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            stale = fields[19] != m.group(2) or int(fields[2]) in groups
        except (OSError, IndexError, ValueError):
            stale = True
        if stale:
            try:
                os.unlink(os.path.join(SINCE_STATE_DIR, name))
            except OSError:
                pass


def print_past_capture(request, lines: Sequence[str]) -> None:
    """Prints lines to the terminal even though pytest captures output (e.g. from a module
    fixture, which versions of something ran and which were skipped)."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with capman.global_and_fixture_disabled():
            print("\n" + "\n".join(lines))
    else:
        print("\n".join(lines))


# ---------------------------------------------------------------------------------------
# Running hangscan

@dataclasses.dataclass
class HsRun:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float
    doc: Optional[dict] = None  # parsed stdout when it is JSON

    def describe(self) -> str:
        return (f"{' '.join(self.argv)} -> exit {self.rc} in {self.seconds:.2f} s\n"
                f"stderr: {self.stderr[-3000:]}\nstdout: {self.stdout[:3000]}")


def communicate_within(proc: subprocess.Popen, timeout: float, what: str):
    """proc.communicate() with a deadline: past it the process group is killed and the test fails."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"{what} did not finish within {timeout} s")


def run_hangscan(args: Sequence[str], *, timeout: float = 120.0, uid: Optional[int] = None,
                 env: Optional[dict] = None, parse_json: Optional[bool] = None,
                 prefix: Sequence[str] = (), binary: Optional[str] = None) -> HsRun:
    """Runs hangscan with a deadline (a hang tool must not hang: a timeout fails the test).

    uid: run as that user (setpriv, no groups). prefix: more argv in front (e.g. setpriv
    dropping a capability). binary: another hangscan executable (e.g. a public copy).
    parse_json: None = parse when "--json" is among args.
    """
    argv = (user_prefix(uid) + list(prefix) + [binary or hangscan_bin()]
            + [str(a) for a in args])
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"hangscan did not finish within {timeout} s: {argv}\n"
                             f"stderr: {err.decode(errors='replace')[-3000:]}")
    run = HsRun(argv, proc.returncode, out.decode(errors="replace"),
                err.decode(errors="replace"), time.monotonic() - start)
    if parse_json is None:
        parse_json = "--json" in run.argv
    if parse_json and run.stdout.strip():
        try:
            run.doc = json.loads(run.stdout)
        except json.JSONDecodeError as e:
            raise AssertionError(f"hangscan printed invalid JSON ({e}):\n{run.describe()}")
    return run


def dump(pids: int | Iterable[int], *extra: str, unwinder: Optional[str] = None,
         as_json: bool = True, **kw) -> HsRun:
    """`hangscan dump --pid P... [--json] [--unwinder U] [extra...]`."""
    args = ["dump"]
    for pid in ([pids] if isinstance(pids, int) else pids):
        args += ["--pid", str(pid)]
    if as_json:
        args.append("--json")
    if unwinder:
        args += ["--unwinder", unwinder]
    args += list(extra)
    return run_hangscan(args, **kw)


# ---------------------------------------------------------------------------------------
# JSON navigation (docs/output-schema.md)

def process_of(doc: dict, pid: int) -> dict:
    for p in doc.get("processes", []):
        if p.get("pid") == pid:
            return p
    raise AssertionError(f"pid {pid} not in report; pids: "
                         f"{[p.get('pid') for p in doc.get('processes', [])]}")


def thread_named(proc: dict, name: str) -> dict:
    hits = [t for t in proc["threads"] if t.get("name") == name]
    assert len(hits) == 1, (f"expected one thread named {name!r}, found {len(hits)}; names: "
                            f"{sorted(t.get('name') for t in proc['threads'])}")
    return hits[0]


def thread_by_tid(proc: dict, tid: int) -> dict:
    for t in proc["threads"]:
        if t.get("tid") == tid:
            return t
    raise AssertionError(f"tid {tid} not in process {proc.get('pid')}")


def frames_of(thread: dict, kinds: Sequence[str] = ("native", "inline")) -> list[dict]:
    return [f for f in thread.get("frames", []) if f.get("kind") in kinds]


def function_names(frames: Iterable[dict]) -> list[str]:
    return [f.get("function") for f in frames]


def find_frame(frames: Sequence[dict], function: str, *, regex: bool = False,
               start: int = 0) -> int:
    """Index of the first frame at or after `start` whose function is `function`
    (or matches the regex), or -1."""
    for i in range(start, len(frames)):
        name = frames[i].get("function") or ""
        if (re.search(function, name) if regex else name == function):
            return i
    return -1


def format_stack(thread: dict) -> str:
    """One line per frame, for assertion messages."""
    lines = [f"thread {thread.get('tid')} {thread.get('name')!r} state {thread.get('state')}"]
    for f in thread.get("frames", []):
        lines.append(f"  [{f.get('kind')}] {f.get('function')} {f.get('file')}:{f.get('line')}"
                     f" {os.path.basename(f.get('module') or '')}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Memory cgroups (the tests that need a limit; removed on close)

class MemoryCgroup:
    """A memory cgroup with a limit, on the v1 memory hierarchy or on v2; removed on exit."""

    def __init__(self, limit):
        name = f"hs-test-{uuid.uuid4().hex[:8]}"
        v1 = "/sys/fs/cgroup/memory"
        v2 = self._v2_root()
        if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
            self.root, self.limit_file, self.usage_file = v1, "memory.limit_in_bytes", "memory.usage_in_bytes"
        elif v2:
            self.root, self.limit_file, self.usage_file = v2, "memory.max", "memory.current"
        else:
            pytest.skip("no memory cgroup controller is mounted here")
        self.rel = "/" + name
        self.path = self.root + self.rel
        os.mkdir(self.path)
        with open(os.path.join(self.path, self.limit_file), "w") as fh:
            fh.write(str(limit))
        self.pids = []

    @staticmethod
    def _v2_root():
        for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
            try:
                if "memory" in open(os.path.join(root, "cgroup.subtree_control")).read().split():
                    return root
            except OSError:
                pass
        return None

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as fh:
            fh.write(str(pid))
        self.pids.append(pid)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def usage(self):
        return int(open(os.path.join(self.path, self.usage_file)).read())

    def close(self):
        try:  # whatever a target moved in itself (ring_allreduce.py --oom-cgroup) leaves too
            with open(os.path.join(self.path, "cgroup.procs")) as fh:
                self.pids += [int(x) for x in fh.read().split()]
        except OSError:
            pass
        for pid in self.pids:
            try:
                with open(os.path.join(self.root, "cgroup.procs"), "w") as fh:
                    fh.write(str(pid))
            except OSError:
                pass  # gone
        deadline = time.monotonic() + 10
        while True:
            try:
                os.rmdir(self.path)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
