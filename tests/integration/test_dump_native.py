"""`hangscan dump` on native targets: exact functions, file:line, inline frames, thread
names and states, for both unwinders (issue "Foundation", item 3).

Each target program (tests/programs/) blocks at lines marked `HS-LINE: name`; expected line
numbers come from those markers, so editing a program never silently breaks a test.
Targets are started once per module and dumped once per unwinder (cached), then many small
tests look at the same reports.
"""

import os
import re
import socket

import pytest

import hs_testlib as hs


@pytest.fixture(autouse=True)
def ptrace_path(monkeypatch):
    """These tests are about the ptrace stop: dump's quiet path (BPF, test_quiet_dump.py) is
    off for them."""
    monkeypatch.setenv("HANGSCAN_NO_BPF", "1")


UNWINDERS = ["libdw", "libunwind"]
FRAME_KEYS = {"kind", "function", "file", "line", "module", "offset", "build_id"}


class Dumps:
    """Started targets and their dumps, by (program, unwinder), computed on first use."""

    def __init__(self, pool):
        self.pool = pool
        self.targets = {}
        self.runs = {}

    def target(self, name, *args):
        if name not in self.targets:
            self.targets[name] = self.pool.start([hs.program(name), *args])
        return self.targets[name]

    def run(self, name, unwinder):
        key = (name, unwinder)
        if key not in self.runs:
            target = self.target(name, *(["200"] if name == "many_threads" else []))
            run = hs.dump(target.pid, unwinder=unwinder)
            assert run.rc == 0, run.describe()
            assert run.doc is not None, run.describe()
            self.runs[key] = run
        return self.runs[key]

    def process(self, name, unwinder):
        return hs.process_of(self.run(name, unwinder).doc, self.target(name).pid)


@pytest.fixture(scope="module")
def dumps(module_targets, hangscan):
    return Dumps(module_targets)


def src_file(frame):
    return frame.get("file") or ""


def assert_frame(frames, index, function, source, tag, kind="native", thread=None):
    """frames[index] is `function` of `kind` at tests/programs/<source>:<HS-LINE tag>."""
    context = hs.format_stack(thread) if thread else repr(frames)
    assert 0 <= index < len(frames), f"no frame #{index} (want {function}):\n{context}"
    f = frames[index]
    assert f["function"] == function, f"frame #{index}: want {function}\n{context}"
    assert f["kind"] == kind, f"frame #{index} {function}: want kind {kind}\n{context}"
    assert src_file(f).endswith("tests/programs/" + source), f"{function}: file\n{context}"
    assert f["line"] == hs.hs_line(source, tag), f"{function}: line (HS-LINE {tag})\n{context}"


def libc_has_debuginfo():
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    if not os.path.exists(libc):
        return False
    bid = hs.build_id(libc)
    return os.path.exists(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")


# --------------------------------------------------------------------------------------
# Report shape


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_report_shape(dumps, unwinder):
    doc = dumps.run("deadlock", unwinder).doc
    target = dumps.target("deadlock")
    assert doc["schema"] == "hangscan/1"
    assert isinstance(doc["diagnostics"], list)
    assert len(doc["processes"]) == 1
    proc = hs.process_of(doc, target.pid)
    assert proc["host"] == socket.gethostname()
    assert isinstance(proc["pause_us"], int) and 0 < proc["pause_us"] < 5_000_000, proc["pause_us"]
    assert sorted(t["tid"] for t in proc["threads"]) == target.tids()
    for thread in proc["threads"]:
        assert {"tid", "name", "state", "wchan", "syscall", "frames",
                "kernel_frames"} <= thread.keys(), thread.keys()
        assert thread["frames"], hs.format_stack(thread)
        for f in thread["frames"]:
            assert FRAME_KEYS <= f.keys(), f
            assert f["kind"] in ("native", "inline"), f
            assert re.fullmatch(r"0x[0-9a-f]+", f["offset"] or ""), f


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_deadlock_threads_stacks(dumps, unwinder):
    proc = dumps.process("deadlock", unwinder)
    with_debuginfo = libc_has_debuginfo()
    for name, caller, tag in (("hs-lock-a", "thread_a_main", "a_calls_second"),
                              ("hs-lock-b", "thread_b_main", "b_calls_second")):
        thread = hs.thread_named(proc, name)
        frames = thread["frames"]
        stack = hs.format_stack(thread)
        i = hs.find_frame(frames, "lock_second")
        assert_frame(frames, i, "lock_second", "deadlock.c", "lock_second", thread=thread)
        assert_frame(frames, i + 1, caller, "deadlock.c", tag, thread=thread)
        lock = hs.find_frame(frames, r"^_*pthread_mutex_lock$", regex=True)
        assert 0 <= lock < i, f"pthread_mutex_lock must be inside lock_second:\n{stack}"
        if with_debuginfo:  # libc's local symbols come from its debuginfo (libc6-dbg)
            wait = hs.find_frame(frames, r"lll_lock_wait$", regex=True)
            assert 0 <= wait < lock, f"__lll_lock_wait must be inside the mutex lock:\n{stack}"
            # Outermost frames of a thread: start_thread then the clone.
            assert hs.find_frame(frames, "start_thread", start=i + 2) > i + 1, stack


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_deadlock_frame_addresses(dumps, unwinder):
    target = dumps.target("deadlock")
    proc = dumps.process("deadlock", unwinder)
    exe = hs.program("deadlock")
    frames = hs.thread_named(proc, "hs-lock-a")["frames"]
    f = frames[hs.find_frame(frames, "lock_second")]
    assert f["module"] == exe
    assert f["build_id"] == hs.build_id(exe)
    pc, offset = int(f["pc"], 16), int(f["offset"], 16)
    assert pc - offset == hs.load_bias(target.pid, exe), (f, hs.load_bias(target.pid, exe))


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_blocked_thread_kernel_state(dumps, unwinder):
    proc = dumps.process("deadlock", unwinder)
    for name in ("hs-lock-a", "hs-lock-b", "deadlock"):
        thread = hs.thread_named(proc, name)
        assert thread["state"] == "S", hs.format_stack(thread)
        assert thread["syscall"] == "futex", thread["syscall"]
        assert "futex" in (thread["wchan"] or ""), thread["wchan"]
        kernel = thread["kernel_frames"]
        assert kernel and all(k["kind"] == "kernel" for k in kernel), kernel
        assert any("futex" in k["function"] for k in kernel), kernel


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_main_thread(dumps, unwinder):
    target = dumps.target("deadlock")
    proc = dumps.process("deadlock", unwinder)
    thread = hs.thread_by_tid(proc, target.pid)
    assert thread["name"] == "deadlock"
    frames = thread["frames"]
    assert_frame(frames, hs.find_frame(frames, "main"), "main", "deadlock.c", "main_join",
                 thread=thread)
    if libc_has_debuginfo():  # __pthread_clockjoin_ex is a local symbol of libc
        assert hs.find_frame(frames, r"pthread_join|pthread_clockjoin", regex=True) >= 0, \
            hs.format_stack(thread)


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_inline_frame(dumps, unwinder):
    proc = dumps.process("inline_wait", unwinder)
    thread = hs.thread_named(proc, "hs-condwait")
    frames = thread["frames"]
    i = hs.find_frame(frames, "wait_for_signal")
    assert_frame(frames, i, "wait_for_signal", "inline_wait.c", "cond_wait", kind="inline",
                 thread=thread)
    assert_frame(frames, i + 1, "wait_outer", "inline_wait.c", "outer_calls_inner",
                 thread=thread)
    assert_frame(frames, i + 2, "condwait_main", "inline_wait.c", "main_calls_outer",
                 thread=thread)
    # An inline frame shares the pc of the native frame it was inlined into.
    assert frames[i]["pc"] == frames[i + 1]["pc"]
    assert hs.find_frame(frames, r"pthread_cond_wait", regex=True) in range(0, i), \
        hs.format_stack(thread)
    assert thread["state"] == "S"


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_busy_thread_is_running(dumps, unwinder):
    proc = dumps.process("busy", unwinder)
    thread = hs.thread_named(proc, "hs-spin")
    frames = thread["frames"]
    assert thread["state"] == "R", hs.format_stack(thread)
    assert thread["syscall"] == "running", thread["syscall"]
    assert_frame(frames, 0, "spin_forever", "busy.c", "spin", thread=thread)
    assert_frame(frames, 1, "spin_main", "busy.c", "spin_main_calls", thread=thread)
    assert hs.thread_named(proc, "busy")["state"] == "S"


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_cpp_names_demangled(dumps, unwinder):
    proc = dumps.process("cpp_names", unwinder)
    thread = hs.thread_named(proc, "hs-cpp")
    frames = thread["frames"]
    stack = hs.format_stack(thread)
    i = hs.find_frame(frames, r"hs::demo::Mailbox<int>::wait_for<hs::demo::Tag>\(hs::demo::Tag\)",
                      regex=True)
    assert i >= 0, stack
    assert frames[i]["line"] == hs.hs_line("cpp_names.cpp", "mailbox_wait"), stack
    assert src_file(frames[i]).endswith("tests/programs/cpp_names.cpp"), stack
    runner = frames[i + 1]
    assert re.search(r"hs::demo::\(anonymous namespace\)::Runner::operator\(\)",
                     runner["function"]), stack
    assert runner["line"] == hs.hs_line("cpp_names.cpp", "runner_calls"), stack
    main = hs.thread_named(proc, "cpp_names")["frames"]
    assert hs.find_frame(main, r"^std::thread::join\(\)$", regex=True) >= 0, main
    for t in proc["threads"]:
        for f in t["frames"]:
            assert not (f["function"] or "").startswith("_Z"), f"not demangled: {f}"


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_200_threads_fully_reported(dumps, unwinder):
    target = dumps.target("many_threads", "200")
    proc = dumps.process("many_threads", unwinder)
    assert len(proc["threads"]) == 201
    assert sorted(t["tid"] for t in proc["threads"]) == target.tids()
    assert proc["pause_us"] > 0
    seen = set()
    for thread in proc["threads"]:
        if thread["tid"] == target.pid:
            assert thread["name"] == "many_threads"
            continue
        m = re.fullmatch(r"hs-w(\d+)", thread["name"])
        assert m, thread["name"]
        index = int(m.group(1))
        seen.add(index)
        park = f"park_{index % 4}"
        frames = thread["frames"]
        i = hs.find_frame(frames, park)
        assert_frame(frames, i, park, "many_threads.c", park, thread=thread)
        assert_frame(frames, i + 1, "worker_main", "many_threads.c", "worker_calls_park",
                     thread=thread)
        assert thread["state"] == "S", hs.format_stack(thread)
        assert thread["wchan"], hs.format_stack(thread)
    assert seen == set(range(200))


@pytest.mark.parametrize("unwinder", UNWINDERS)
def test_function_names_carry_no_symbol_version(dumps, unwinder):
    """`pthread_mutex_lock`, not `pthread_mutex_lock@GLIBC_2.2.5`: a version suffix from
    .dynsym/.symtab is an ELF detail, and it splits identical frames across glibc builds."""
    for name in ("deadlock", "cpp_names"):
        for thread in dumps.process(name, unwinder)["threads"]:
            for f in thread["frames"]:
                assert "@" not in (f["function"] or ""), f"{name}: {f['function']}"


@pytest.mark.parametrize("name", ["deadlock", "inline_wait", "busy", "cpp_names",
                                  "many_threads"])
def test_unwinders_agree(dumps, name):
    """Both backends give the same frames for the program's own code."""
    exe = hs.program(name)
    stacks = {}
    for unwinder in UNWINDERS:
        proc = dumps.process(name, unwinder)
        stacks[unwinder] = {
            t["tid"]: [(f["kind"], f["function"], f["file"], f["line"])
                       for f in t["frames"] if f["module"] == exe]
            for t in proc["threads"]}
    assert stacks["libdw"].keys() == stacks["libunwind"].keys()
    for tid, frames in stacks["libdw"].items():
        if name == "busy" and frames and frames[0][1] == "spin_forever":
            frames, other = frames[1:], stacks["libunwind"][tid][1:]  # the pc moves on
        else:
            other = stacks["libunwind"][tid]
        assert frames, f"{name} tid {tid}: no frames of {exe}"
        assert frames == other, f"{name} tid {tid}:\nlibdw     {frames}\nlibunwind {other}"


def test_default_unwinder_is_libdw(dumps):
    target = dumps.target("inline_wait")
    run = hs.dump(target.pid)
    assert run.rc == 0, run.describe()
    proc = hs.process_of(run.doc, target.pid)
    want = hs.process_of(dumps.run("inline_wait", "libdw").doc, target.pid)

    def key(p):
        return {t["tid"]: [(f["kind"], f["function"], f["line"]) for f in t["frames"]]
                for t in p["threads"]}
    assert key(proc) == key(want)


def test_text_output(dumps):
    target = dumps.target("deadlock")
    run = hs.dump(target.pid, as_json=False)
    assert run.rc == 0, run.describe()
    text = run.stdout
    for needle in ("hs-lock-a", "hs-lock-b", "lock_second", "thread_a_main", "thread_b_main",
                   f"deadlock.c:{hs.hs_line('deadlock.c', 'lock_second')}",
                   f"deadlock.c:{hs.hs_line('deadlock.c', 'a_calls_second')}",
                   str(target.pid)):
        assert needle in text, f"{needle!r} not in text output:\n{text}"
    assert not text.lstrip().startswith("{"), "text output must not be JSON"


def test_two_pids_in_one_dump(dumps):
    a, b = dumps.target("deadlock"), dumps.target("inline_wait")
    run = hs.dump([a.pid, b.pid])
    assert run.rc == 0, run.describe()
    assert sorted(p["pid"] for p in run.doc["processes"]) == sorted([a.pid, b.pid])
    hs.thread_named(hs.process_of(run.doc, a.pid), "hs-lock-a")
    hs.thread_named(hs.process_of(run.doc, b.pid), "hs-condwait")


def test_targets_run_on_after_dumps(dumps):
    """Every dumped target is still alive and not stopped after all the dumps above."""
    for name in ("deadlock", "inline_wait", "busy"):
        hs.assert_runs_on(dumps.target(name).pid)
    spin = [t for t in dumps.target("busy").tids() if t != dumps.target("busy").pid][0]
    before = hs.cpu_ticks(dumps.target("busy").pid, spin)
    hs.wait_for(lambda: hs.cpu_ticks(dumps.target("busy").pid, spin) > before + 2, 10,
                "the busy thread to keep using CPU")
