"""Differential test: hangscan's native and inline frames against elfutils' eu-stack.

An oracle nobody here wrote: `eu-stack -i -s -p PID` (live) and `eu-stack -i -s --core CORE`
(gdb's gcore of the same target) print every thread's frames with inline frames and
file:line. For each target, thread by thread, hangscan (`dump --json`, `core --json`, both
unwinders) must agree with it wherever both tools name a frame:

- the same return addresses (physical frames) in the same order;
- at each address, the same number of frames (the inline chain, innermost first, then the
  function compiled out of line), the same function names, and the same file:line, where
  every caller in an inline chain stands at the call site of its callee (DW_AT_call_file and
  DW_AT_call_line), as eu-stack -i and gdb print it;
- a file:line one tool gives and the other does not is a disagreement too;
- where elfutils is known to be wrong (two quirks, documented at Addr2Line below), and
  wherever both tools print a single frame, binutils' `addr2line -i` (which prints what gdb
  prints) is asked as well, and a chain it prints must be hangscan's, frame for frame.

Targets: tests/programs/cpp_inline_chains.cpp at -O2 and -O3 (std::mutex + lock_guard
deadlock, condition_variable::wait with a predicate, future::get, lambdas, std::thread), a
pure python3.11 process with --native, and one torch process.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import core_testlib as cores
import hs_testlib as hs

UNWINDERS = ["libdw", "libunwind"]
PYTHON = "/usr/bin/python3.11"

# ---------------------------------------------------------------------------------------
# The ONE place where names that differ only in spelling are mapped (nowhere else in this
# test, and nothing else is forgiven). eu-stack -i implies -d: it names every frame after
# DWARF (the subprogram's or inlined subroutine's linkage name, else its name); hangscan names
# inline frames after DWARF too, but an out-of-line function after its ELF symbol (the one
# dwfl_module_addrinfo picks). Two spellings of one function:
#  - GCC's clone suffixes on the ELF symbol of a specialized copy (".constprop.0", ".isra.0",
#    ".part.0", ".lto_priv.0", ".cold", " [clone .constprop.0]" when demangled): the DWARF
#    name has none;
#  - aliases: several symbols at one address, e.g. glibc's internal definition and its
#    exported, versioned name ("___pthread_cond_wait" / "pthread_cond_wait",
#    "__GI___clock_nanosleep" / "clock_nanosleep", "__libc_start_main_impl" /
#    "__libc_start_main"). Two names are aliases only when the module's own symbol tables
#    (the file's and its separate debug file's, read with binutils' nm) put both at one
#    address; no list of names is trusted.
CLONE_SUFFIX = re.compile(r"((\.(constprop|isra|part|lto_priv|cold)(\.\d+)?)"
                          r"|( \[clone \.[a-z_]+(\.\d+)?\]))+$")


def unsuffixed(name: str) -> str:
    return CLONE_SUFFIX.sub("", name.split("@", 1)[0])


@functools.lru_cache(maxsize=None)
def symbol_addresses(module: str, build_id: str) -> dict[str, frozenset[int]]:
    """Unsuffixed symbol name -> its addresses, over the module's .symtab, .dynsym and its
    debug file's .symtab."""
    files = [module]
    if len(build_id) > 2:
        files.append(f"/usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug")
    out: dict[str, set[int]] = {}
    for path in files:
        if not os.path.exists(path):
            continue
        for flags in (["-C"], ["-C", "-D"]):
            proc = subprocess.run(["nm", *flags, "--defined-only", path], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
            for text in proc.stdout.decode(errors="replace").splitlines():
                parts = text.split(" ", 2)
                if len(parts) == 3 and parts[1] in "TtWwiI":
                    out.setdefault(unsuffixed(parts[2]), set()).add(int(parts[0], 16))
    return {k: frozenset(v) for k, v in out.items()}


def same_function(ours: "Entry", theirs: str) -> bool:
    """hangscan's name of a frame and eu-stack's name one function (see above)."""
    a, b = unsuffixed(ours.function), unsuffixed(theirs)
    if a == b:
        return True
    syms = symbol_addresses(ours.module, ours.build_id)
    return bool(syms.get(a, frozenset()) & syms.get(b, frozenset()))
# ---------------------------------------------------------------------------------------


def named(name: str | None) -> bool:
    return bool(name) and name != "??"


class Entry:
    """One frame as a tool printed it: pc, function, file, line (None when not printed)."""

    def __init__(self, pc: int, function: str | None, file: str | None, line: int | None,
                 module: str = "", offset: int = 0, build_id: str = "", kind: str = ""):
        self.pc, self.function, self.file, self.line = pc, function, file, line
        self.kind = kind
        self.module, self.offset, self.build_id = module, offset, build_id   # hangscan's only

    def __repr__(self) -> str:
        where = f" {self.file}:{self.line}" if self.file else ""
        pc = f"{self.pc:#x}" if self.pc is not None else "?"
        return f"{pc} {self.function if self.kind != 'eval' else '(eval loop: Python frames)'}{where}"


FRAME_RE = re.compile(r"^#(\d+)\s+0x([0-9a-f]+)(?:\s+(.*))?$")
SOURCE_RE = re.compile(r"^\s+(.+?):(\d+)(?::\d+)?$")


def eu_stack(args: list[str], timeout: float = 120.0) -> dict[int, list[Entry]]:
    """`eu-stack -i -s ARGS` parsed: tid -> frames, innermost first."""
    exe = shutil.which("eu-stack")
    assert exe, "eu-stack (package elfutils) is needed"
    proc = subprocess.run([exe, "-i", "-s", *args], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    out = proc.stdout.decode(errors="replace")
    threads: dict[int, list[Entry]] = {}
    current = None
    for text in out.splitlines():
        if text.startswith("TID "):
            current = threads.setdefault(int(text[4:].rstrip(":")), [])
            continue
        m = FRAME_RE.match(text)
        if m and current is not None:
            current.append(Entry(int(m.group(2), 16), (m.group(3) or "").strip() or None, None, None))
            continue
        s = SOURCE_RE.match(text)
        if s and current:
            current[-1].file, current[-1].line = s.group(1), int(s.group(2))
    assert threads, f"eu-stack printed no thread (exit {proc.returncode}): {proc.stderr[-2000:]!r}"
    return threads


def hangscan_threads(proc: dict) -> dict[int, list[Entry]]:
    """tid -> hangscan's native and inline frames, innermost first.

    With --native (and in cores) each out-of-line frame of CPython's eval loop is replaced by
    the Python frames it runs (docs/python-versions.md); its inline frames stay. Such a frame
    comes back here as an unnamed entry (nothing to compare but its place), at the address of
    the inline frames left before the Python frames (None: any address)."""
    out = {}
    for t in proc["threads"]:
        native = t.get("native_frames") or []   # set when the stacks could not be merged
        entries: list[Entry] = []
        in_python = False
        for f in native or t.get("frames", []):
            if f["kind"] == "python":
                if not in_python:
                    at = entries[-1] if entries and entries[-1].kind == "inline" else None
                    entries.append(Entry(at.pc if at else None, None, None, None,
                                         at.module if at else "", at.offset if at else 0,
                                         at.build_id if at else "", kind="eval"))
                in_python = True
                continue
            in_python = False
            if f["kind"] in ("native", "inline"):
                entries.append(Entry(int(f["pc"], 16), f["function"], f.get("file"), f.get("line"),
                                     f.get("module") or "", int(f["offset"], 16),
                                     f.get("build_id") or "", kind=f["kind"]))
        out[t["tid"]] = entries
    return out


def by_address(frames: list[Entry]) -> list[list[Entry]]:
    """Frames grouped by pc: each group is one physical frame and its inline chain."""
    groups: list[list[Entry]] = []
    for f in frames:
        if groups and f.pc is not None and groups[-1][0].pc == f.pc:
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups


# ---------------------------------------------------------------------------------------
# Where eu-stack is known to be wrong, a third tool decides: binutils' addr2line -i, which
# prints what gdb prints. Only for these two elfutils quirks, and hangscan must then match
# addr2line exactly:
#  - libdw's dwarf_getscopes() finds no scope at addresses of LTO units whose inlined callees'
#    abstract origins lie in other CUs (Debian's python3.11): eu-stack prints such an address
#    as one frame, at the innermost inline callee's line (`PyObject_Vectorcall` at
#    pycore_call.h:92), where gdb and addr2line print the whole chain
#    (`_PyObject_VectorcallTstate` pycore_call.h:92, `PyObject_Vectorcall` call.c:299);
#  - libdwfl gives an address in a gap between the CUs' address ranges to the CU before the
#    gap and prints a line of it (`_start` at vector.tcc:498); gdb and addr2line print none.
Chain = list  # [(function, file or None, line or None)], innermost first


class Addr2Line:
    """addr2line -i answers, asked in one batch per module (each run loads the DWARF)."""

    def __init__(self):
        self.wanted: dict[str, set[int]] = {}
        self.known: dict[tuple[str, int], Chain] = {}

    @staticmethod
    def vaddr(f: Entry, innermost: bool) -> int:
        return f.offset if innermost else f.offset - 1

    def ask(self, f: Entry, innermost: bool) -> Chain | None:
        """The chain at hangscan's frame `f`; None until fetch() ran (the question is kept)."""
        key = (f.module, self.vaddr(f, innermost))
        if key not in self.known:
            self.wanted.setdefault(f.module, set()).add(key[1])
            return None
        return self.known[key]

    def fetch(self) -> None:
        for module, vaddrs in self.wanted.items():
            order = sorted(vaddrs)
            proc = subprocess.run(["addr2line", "-a", "-i", "-f", "-C", "-e", module,
                                   *map(hex, order)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            lines = proc.stdout.decode(errors="replace").splitlines()
            chains: dict[int, Chain] = {}
            # Pairs: after each address line, (function, file:line) lines alternate.
            current, pending = None, None
            for text in lines:
                if re.fullmatch(r"0x[0-9a-f]+", text):
                    current, pending = chains.setdefault(int(text, 16), []), None
                elif current is not None and pending is None:
                    pending = text
                elif current is not None:
                    text = re.sub(r" \(discriminator \d+\)$", "", text)
                    where, _, num = text.rpartition(":")
                    line = int(num) if num.isdigit() and int(num) > 0 else None
                    current.append((pending, None if where == "??" else where, line))
                    pending = None
            for v in order:
                self.known[(module, v)] = chains.get(v, [])
        self.wanted.clear()


def matches_addr2line(ours: list[Entry], chain: Chain) -> bool:
    """hangscan's frames at one address are addr2line's chain (its paths are joined to the
    compilation directory: hangscan's, as libdw names files, must end them)."""
    if chain and chain[0][1] is None:   # no line: one frame, named, without file:line
        return len(ours) == 1 and ours[0].file is None
    if len(ours) != len(chain):
        return False
    for f, (function, where, line) in zip(ours, chain):
        if f.kind == "eval":   # replaced by Python frames: only its place is known
            continue
        if not same_function(f, function) or f.line != line or not f.file or not where.endswith(f.file):
            return False
    return True


def disagreements(ours: list[Entry], theirs: list[Entry], oracle: Addr2Line) -> list[str]:
    """Where hangscan's frames of one thread differ from eu-stack's (empty: they agree)."""
    a, b = by_address(ours), by_address(theirs)
    problems = []
    if len(a) != len(b) or any(x[0].pc not in (None, y[0].pc) for x, y in zip(a, b)):
        problems.append("different return addresses")
    for i, (ga, gb) in enumerate(zip(a, b)):
        if ga[0].pc not in (None, gb[0].pc):
            break
        if len(ga) == 1 and ga[0].kind == "eval":   # all of it replaced by Python frames
            continue
        quirk = (len(ga) != len(gb) and len(gb) == 1) or \
            (len(ga) == len(gb) == 1 and ga[0].file is None and gb[0].file is not None)
        if quirk:
            chain = oracle.ask(ga[-1], innermost=i == 0)
            if chain is None or matches_addr2line(ga, chain):
                continue
            problems.append(f"{gb[0].pc:#x}: {len(ga)} frames, eu-stack {len(gb)}, addr2line -i "
                            f"{chain}")
            continue
        if len(ga) != len(gb):
            problems.append(f"{gb[0].pc:#x}: {len(ga)} frames, eu-stack {len(gb)}")
            continue
        if len(ga) == 1 and ga[0].file is not None:
            # Both print one frame: the first quirk above would leave a chain lost by both
            # unseen, so addr2line -i is asked too; a chain it prints must be hangscan's.
            chain = oracle.ask(ga[0], innermost=i == 0)
            if chain is not None and len(chain) > 1 and not matches_addr2line(ga, chain):
                problems.append(f"{gb[0].pc:#x}: one frame, addr2line -i {chain}")
        for fa, fb in zip(ga, gb):
            if named(fa.function) and named(fb.function) and not same_function(fa, fb.function):
                problems.append(f"{fa.pc:#x}: function {fa.function!r}, eu-stack {fb.function!r}")
            if not (named(fa.function) and named(fb.function)):
                continue
            if (fa.file, fa.line) != (fb.file, fb.line):
                problems.append(f"{fa.pc:#x} {fb.function}: {fa.file}:{fa.line}, "
                                f"eu-stack {fb.file}:{fb.line}")
    return problems


def assert_agree(doc: dict, pid: int, theirs: dict[int, list[Entry]], what: str,
                 tids: list[int] | None = None) -> int:
    """Every thread of `pid` in hangscan's report agrees with eu-stack; returns the number of
    frames compared with file:line on both sides (so a test can insist there were some)."""
    ours = hangscan_threads(hs.process_of(doc, pid))
    wanted = tids if tids is not None else sorted(theirs)
    assert sorted(ours) == sorted(theirs), f"{what}: threads {sorted(ours)} vs eu-stack {sorted(theirs)}"
    report = []
    compared = 0
    oracle = Addr2Line()
    for tid in wanted:   # first pass: the questions for addr2line, asked in one batch
        disagreements(ours[tid], theirs[tid], oracle)
    oracle.fetch()
    for tid in wanted:
        problems = disagreements(ours[tid], theirs[tid], oracle)
        if problems:
            report.append(f"thread {tid}: " + "; ".join(problems) + "\n  hangscan:\n    "
                          + "\n    ".join(map(repr, ours[tid])) + "\n  eu-stack:\n    "
                          + "\n    ".join(map(repr, theirs[tid])))
        compared += sum(1 for f in theirs[tid] if f.file)
    assert not report, f"{what}: hangscan and eu-stack disagree\n" + "\n".join(report)
    return compared


def wait_all_asleep(pid: int, timeout: float = 60.0) -> None:
    """Every thread sleeps in a syscall (so both tools see the same stacks)."""
    def asleep():
        ts = hs.tids(pid)
        return ts and all(hs.thread_syscall(pid, t) not in (None, "running") for t in ts)
    hs.wait_for(asleep, timeout, f"every thread of {pid} to sleep in a syscall")


# ---------------------------------------------------------------------------------------
# Targets (one each per module; they are only read)

TORCH_SCRIPT = r"""
import os, sys, threading, time
import torch
torch.set_num_threads(2)
x = torch.ones(256, 256)
(x @ x).sum()                      # starts torch's thread pool
lock = threading.Lock()
lock.acquire()
threading.Thread(target=lock.acquire, name="hs-lock", daemon=True).start()
os.write(int(sys.argv[1]), b"ready\n")
time.sleep(3600)
"""


@pytest.fixture(scope="module")
def targets(module_targets):
    started = {}

    def get(name):
        if name in started:
            return started[name]
        if name.startswith("cpp_inline_chains"):
            t = module_targets.start([hs.program(name)])
        elif name == "python":
            if not os.access(PYTHON, os.X_OK):
                pytest.skip(f"{PYTHON} is not installed")
            t = module_targets.start([PYTHON, str(hs.program_source("py_threads.py")), hs.READY, "4"])
        elif name == "torch":
            if not os.access(PYTHON, os.X_OK) or importlib.util.find_spec("torch") is None:
                pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")
            t = module_targets.start([PYTHON, "-c", TORCH_SCRIPT, hs.READY], timeout=120)
        else:
            raise ValueError(name)
        wait_all_asleep(t.pid)
        started[name] = t
        return t
    return get


@pytest.fixture(scope="module")
def core_dir():
    with tempfile.TemporaryDirectory(prefix="hs-diff-cores-") as d:
        yield Path(d)


@pytest.fixture(scope="module")
def core_of(targets, core_dir):
    made = {}

    def get(name):
        if name not in made:
            made[name] = cores.gcore(targets(name).pid, core_dir / name)
        return made[name]
    return get


TARGETS = ["cpp_inline_chains", "cpp_inline_chains_O3", "python", "torch"]


def extra_args(name: str) -> list[str]:
    return ["--native"] if name in ("python", "torch") else []


@pytest.mark.parametrize("unwinder", UNWINDERS)
@pytest.mark.parametrize("name", TARGETS)
def test_live_matches_eu_stack(targets, name, unwinder):
    t = targets(name)
    theirs = eu_stack(["-p", str(t.pid)])
    run = hs.dump(t.pid, *extra_args(name), unwinder=unwinder)
    assert run.rc == 0, run.describe()
    compared = assert_agree(run.doc, t.pid, theirs, f"{name} live, {unwinder}")
    assert compared >= 10, f"only {compared} frames with file:line compared"
    hs.assert_runs_on(t.pid)


@pytest.mark.parametrize("unwinder", UNWINDERS)
@pytest.mark.parametrize("name", TARGETS)
def test_core_matches_eu_stack(targets, core_of, name, unwinder):
    t = targets(name)
    core = core_of(name)
    theirs = eu_stack(["--core", str(core)])
    run = cores.hangscan_core([core], "--unwinder", unwinder)   # interleaves by default
    assert run.rc == 0, run.describe()
    compared = assert_agree(run.doc, t.pid, theirs, f"{name} core, {unwinder}")
    assert compared >= 10, f"only {compared} frames with file:line compared"


@pytest.mark.parametrize("name", ["cpp_inline_chains", "cpp_inline_chains_O3"])
def test_lock_guard_chain_is_whole(targets, name):
    """The issue's own case, asserted exactly (not only relative to eu-stack): each
    deadlocked thread shows __gthread_mutex_lock, std::mutex::lock() and the lock_guard
    constructor as inline frames, and the user's function at its lock_guard line."""
    t = targets(name)
    run = hs.dump(t.pid)
    assert run.rc == 0, run.describe()
    proc = hs.process_of(run.doc, t.pid)
    src = "cpp_inline_chains.cpp"
    for thread_name, function, tag in (("hs-ab", "hs::chains::take_ab(hs::chains::Shared&)", "ab_second"),
                                       ("hs-ba", "hs::chains::take_ba(hs::chains::Shared&)", "ba_second")):
        thread = hs.thread_named(proc, thread_name)
        frames = hs.frames_of(thread)
        i = hs.find_frame(frames, "__gthread_mutex_lock")
        assert i >= 0, hs.format_stack(thread)
        chain = [(f["kind"], f["function"], os.path.basename(f.get("file") or ""))
                 for f in frames[i:i + 4]]
        # (The header lines belong to the installed libstdc++; eu-stack checks them above.)
        assert chain == [
            ("inline", "__gthread_mutex_lock", "gthr-default.h"),
            ("inline", "std::mutex::lock()", "std_mutex.h"),
            ("inline", "std::lock_guard<std::mutex>::lock_guard(std::mutex&)", "std_mutex.h"),
            ("native", function, src),
        ], hs.format_stack(thread)
        assert all(f.get("line") for f in frames[i:i + 3]), hs.format_stack(thread)
        assert frames[i + 3]["line"] == hs.hs_line(src, tag), hs.format_stack(thread)
        assert frames[i + 3]["file"].endswith("tests/programs/" + src), hs.format_stack(thread)


def test_cpython_inline_chain_is_whole(targets):
    """CPython's own chains (an LTO build, where elfutils' dwarf_getscopes() finds no scope
    and eu-stack -i shows one frame at the callee's header line): the main thread of
    py_threads.py waits in Event.wait, reached from the eval loop through PyObject_Vectorcall,
    whose inline callee _PyObject_VectorcallTstate is a frame of its own, as gdb and
    addr2line -i show it (checked by hand: gdb `bt` on the same process)."""
    t = targets("python")
    run = hs.dump(t.pid, "--native")
    assert run.rc == 0, run.describe()
    thread = hs.thread_by_tid(hs.process_of(run.doc, t.pid), t.pid)
    frames = hs.frames_of(thread)
    i = hs.find_frame(frames, "PyObject_Vectorcall")
    assert i > 0, hs.format_stack(thread)
    inner, outer = frames[i - 1], frames[i]
    assert (inner["kind"], inner["function"]) == ("inline", "_PyObject_VectorcallTstate"), \
        hs.format_stack(thread)
    assert inner["file"].endswith("Include/internal/pycore_call.h"), hs.format_stack(thread)
    assert outer["kind"] == "native" and outer["file"].endswith("Objects/call.c"), \
        hs.format_stack(thread)
    assert inner["pc"] == outer["pc"]
