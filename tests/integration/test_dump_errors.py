"""Bad input to `hangscan dump`: a one-line error, a hint where there is a fix, the right
exit code, never a crash (issue "Foundation", item 6).

Exit codes: 0 complete, 1 partial, 2 nothing useful, 64 usage. Message phrases (stable,
tested here): "no such process", "is a zombie", "is a kernel thread", "permission denied",
"already traced by <tracer pid>", and a line starting "hint: ".
"""

import os
import random
import shutil
import signal
import subprocess

import pytest

import hs_testlib as hs


def error_text(run):
    """stderr plus, for --json runs, the report's diagnostic messages and hints."""
    parts = [run.stderr]
    if run.doc:
        for d in run.doc.get("diagnostics", []):
            parts += [d.get("message") or "", "hint: " + (d.get("hint") or "")]
        for p in run.doc.get("processes", []):
            for d in p.get("diagnostics", []):
                parts += [d.get("message") or "", "hint: " + (d.get("hint") or "")]
    return "\n".join(parts)


def assert_error(run, rc, phrase, pid=None):
    assert run.rc == rc, run.describe()
    assert phrase in run.stderr, f"{phrase!r} not in stderr:\n{run.describe()}"
    line = next(line for line in run.stderr.splitlines() if phrase in line)
    if pid is not None:
        assert str(pid) in line, f"the error line must name pid {pid}: {line!r}"
    assert "Traceback" not in run.stderr and "terminate called" not in run.stderr


def hint_lines(run):
    return [line for line in run.stderr.splitlines() if line.startswith("hint: ")]


def unused_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    rng = random.Random(4242)
    while True:
        pid = rng.randrange(pid_max // 2, pid_max)
        if not os.path.exists(f"/proc/{pid}"):
            return pid


def kernel_thread_pid():
    """kthreadd (pid 2) when it is one, else any kernel thread (PF_KTHREAD), else None."""
    candidates = [2] + sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    for pid in candidates:
        text = hs.read_text(f"/proc/{pid}/stat")
        if text:
            flags = int(text[text.rfind(")") + 2:].split()[6])
            if flags & 0x00200000:
                return pid
    return None


@pytest.mark.parametrize("as_json", [False, True])
def test_no_such_process(hangscan, as_json):
    pid = unused_pid()
    run = hs.dump(pid, as_json=as_json)
    assert_error(run, 2, "no such process", pid)
    if as_json and run.doc:
        assert "no such process" in error_text(run)


def test_zombie(hangscan):
    child = subprocess.Popen(["true"])
    try:
        hs.wait_for(lambda: hs.process_state(child.pid) == "Z", 10, "the child to be a zombie")
        run = hs.dump(child.pid)
        assert_error(run, 2, "is a zombie", child.pid)
    finally:
        child.wait()


def test_kernel_thread(hangscan):
    pid = kernel_thread_pid()
    if pid is None:
        pytest.skip("no kernel thread visible (container with its own pid namespace)")
    run = hs.dump(pid)
    assert_error(run, 2, "is a kernel thread", pid)


def test_partial_when_one_pid_is_missing(targets):
    good = targets.start([hs.program("deadlock")])
    missing = unused_pid()
    run = hs.dump([good.pid, missing])
    assert run.rc == 1, run.describe()
    hs.thread_named(hs.process_of(run.doc, good.pid), "hs-lock-a")
    text = error_text(run)
    assert "no such process" in text and str(missing) in text, run.describe()
    hs.assert_runs_on(good.pid)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a target as another user")
def test_other_users_process(targets):
    target = targets.start([hs.program("deadlock")])  # owned by root
    run = hs.dump(target.pid, uid=hs.NOBODY, binary=targets.public_copy(hs.hangscan_bin()))
    assert_error(run, 2, "permission denied", target.pid)
    hints = hint_lines(run)
    assert hints, f"no 'hint: ' line:\n{run.describe()}"
    assert any("ptrace_scope" in h or "CAP_SYS_PTRACE" in h for h in hints), hints
    hs.assert_runs_on(target.pid)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to drop CAP_SYS_PTRACE")
def test_root_without_cap_sys_ptrace(targets):
    """A container that drops CAP_SYS_PTRACE: root cannot trace another user's process."""
    target = targets.start([targets.public_copy(hs.program("deadlock"))], uid=hs.NOBODY)
    run = hs.dump(target.pid, as_json=False, prefix=[
        "setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", "--"])
    assert_error(run, 2, "permission denied", target.pid)
    assert any("CAP_SYS_PTRACE" in h for h in hint_lines(run)), run.describe()
    hs.assert_runs_on(target.pid)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a target as another user")
def test_same_user_not_root_works(targets):
    """Without root, a user's own process is dumped normally (no special privilege needed)."""
    target = targets.start([targets.public_copy(hs.program("deadlock"))], uid=hs.NOBODY)
    run = hs.dump(target.pid, uid=hs.NOBODY, binary=targets.public_copy(hs.hangscan_bin()))
    assert run.rc == 0, run.describe()
    frames = hs.thread_named(hs.process_of(run.doc, target.pid), "hs-lock-a")["frames"]
    assert hs.find_frame(frames, "lock_second") >= 0
    hs.assert_runs_on(target.pid)


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_already_traced(targets):
    target = targets.start([hs.program("deadlock")])
    strace = subprocess.Popen(["strace", "-f", "-o", "/dev/null", "-p", str(target.pid)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        hs.wait_for(lambda: all(hs.tracer_pid(target.pid, t) == strace.pid
                                for t in target.tids()), 10, "strace to attach every thread")
        run = hs.dump(target.pid)
        assert_error(run, 2, "already traced by", target.pid)
        line = next(line for line in run.stderr.splitlines() if "already traced by" in line)
        assert str(strace.pid) in line, f"must name the tracer pid {strace.pid}: {line!r}"
    finally:
        strace.send_signal(signal.SIGTERM)  # strace detaches cleanly on SIGTERM
        strace.wait(timeout=10)
    hs.assert_runs_on(target.pid)


@pytest.mark.parametrize("args", [
    ["dump"],
    ["dump", "--pid", "abc"],
    ["dump", "--pid", "12x"],
    ["dump", "--pid", ""],
    ["dump", "--pid", "-5"],
    ["dump", "--pid", "1", "--unwinder", "bogus"],
    ["no-such-command"],
], ids=["no-pid", "pid-abc", "pid-12x", "pid-empty", "pid-negative", "bad-unwinder",
        "bad-command"])
def test_usage_errors(hangscan, args):
    run = hs.run_hangscan(args, parse_json=False)
    assert run.rc == 64, run.describe()
    assert run.stderr.strip(), "a usage error must say what is wrong"
    assert "Traceback" not in run.stderr and "terminate called" not in run.stderr
