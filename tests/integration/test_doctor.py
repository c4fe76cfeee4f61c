"""`hangscan doctor`: set-ups where ptrace or kernel cores would fail are named, with the fix.

Real set-ups, not mocks: an unprivileged user (setpriv, uid 65534, no capabilities) against
a root-owned process, and a process started with a core size limit of 0 (prlimit).
"""

import os

import hs_testlib as hs


def busy_target(targets, prefix=()):
    return targets.start(list(prefix) + [hs.program("deadlock")], ready_at=len(prefix) + 1)


def lines_of(run, level, name):
    return [l for l in run.stdout.splitlines() if l.startswith(f"{level} {name}:")]


def test_ptrace_refused_for_other_user(targets):
    assert os.geteuid() == 0, "this test runs doctor as nobody against a root process"
    t = busy_target(targets)
    run = hs.run_hangscan(["doctor", "--pid", t.pid], uid=hs.NOBODY)
    assert run.rc == 1, run.describe()
    fail = lines_of(run, "FAIL", "ptrace")
    assert len(fail) == 1, run.stdout
    assert f"pid {t.pid} cannot be traced" in fail[0]
    assert "uid 65534" in fail[0] and "belongs to uid 0" in fail[0]
    assert "fix: run hangscan as uid 0" in fail[0]
    hs.assert_runs_on(t.pid)


def test_core_limit_zero(targets):
    t = busy_target(targets, ["prlimit", "--core=0", "--"])
    run = hs.run_hangscan(["doctor", "--pid", t.pid])
    assert run.rc == 1, run.describe()
    fail = lines_of(run, "FAIL", "core limit")
    assert len(fail) == 1, run.stdout
    assert "ulimit -c 0" in fail[0]
    assert f"fix: prlimit --pid {t.pid} --core=unlimited" in fail[0]
    assert lines_of(run, "ok  ", "ptrace"), run.stdout
    hs.assert_runs_on(t.pid)


def test_healthy_target_passes(targets):
    t = busy_target(targets, ["prlimit", "--core=unlimited", "--"])
    run = hs.run_hangscan(["doctor", "--pid", t.pid])
    assert not [l for l in run.stdout.splitlines() if l.startswith("FAIL")], run.stdout
    assert run.rc == 0, run.describe()
    assert lines_of(run, "ok  ", "core limit") and lines_of(run, "ok  ", "coredump_filter")


def test_a_core_directory_of_another_user_is_named(tmp_path):
    """`gcore -o DIR` refuses a directory another user owns (issue 36): doctor says so first."""
    assert os.geteuid() == 0, "this test gives a directory to nobody"
    d = tmp_path / "theirs"
    d.mkdir()
    os.chown(d, hs.NOBODY, hs.NOBODY)
    run = hs.run_hangscan(["doctor", "-o", d])
    assert run.rc == 1, run.describe()
    assert lines_of(run, "FAIL", "core directory") == [
        f"FAIL core directory: refusing -o {d}: it belongs to nobody (uid 65534), who could replace what hangscan "
        "writes there fix: write to a directory that only you or root can write: a new path is made for you "
        "(e.g. under /root or /var/tmp), or run hangscan as the directory's owner"], run.stdout
