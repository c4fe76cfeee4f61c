"""Output files a user cannot turn against root (issue 36, "Output files are created, never
followed"), and write errors that leave nothing behind.

A directory owned by `nobody` with `report.txt`, `report.json` and `n1.txt` planted as links to
a victim file: root's `pdsh --output DIR` refuses it before any node is asked (exit 64) and the
victim is unchanged. In root's own directory a planted link is replaced by the report, never
followed. `gcore -o` and `dump --gcore-dir` through a link of `nobody` are refused. The watchdog
refuses a bundle directory of `nobody` where links named like the next bundles
(`stall-TIME` -> a root directory) wait. A full file system (a small tmpfs) leaves no empty or
partial file and says why with a hint. And an agent that fails keeps its own reason (its error
line, not only its hint) in the node's line.
"""

import os
import shutil
import subprocess
import time
from datetime import datetime, timedelta, timezone

import pytest

import hs_testlib as hs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the threat is root writing for a user")

REFUSED_HINT = ("hint: write to a directory that only you or root can write: a new path is made for you "
                "(e.g. under /root or /var/tmp), or run hangscan as the directory's owner")
NOBODY_OWNS = "it belongs to nobody (uid 65534), who could replace what hangscan writes there"
NO_MATCH = "hs-no-such-proces[s]"  # matches no process, not even the agent's own command line


def plant(directory, names, victim):
    for name in names:
        os.symlink(victim, directory / name)
        os.lchown(directory / name, hs.NOBODY, hs.NOBODY)


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim"
    path.write_text("victim\n")
    return path


def pdsh_args(match, *extra):
    return ["pdsh", "-R", "exec", "-w", "n1", "--match", match, "--timeout", "30", *extra]


@pytest.mark.skipif(not shutil.which("pdsh"), reason="pdsh is not installed")
def test_pdsh_output_dir_of_another_user_is_refused(tmp_path, victim):
    out = tmp_path / "out"
    out.mkdir()
    os.chown(out, hs.NOBODY, hs.NOBODY)
    planted = ["report.txt", "report.json", "n1.txt"]
    plant(out, planted, victim)
    run = hs.run_hangscan(pdsh_args(NO_MATCH, "--json", "--output", out), parse_json=False)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [f"hangscan: refusing --output {out}: {NOBODY_OWNS}", REFUSED_HINT]
    assert run.stdout == ""
    assert victim.read_text() == "victim\n"
    assert sorted(os.listdir(out)) == sorted(planted)


@pytest.mark.skipif(not shutil.which("pdsh"), reason="pdsh is not installed")
def test_pdsh_output_replaces_a_planted_link_never_its_target(targets, tmp_path, victim):
    token = f"hs-planted-link-{os.getpid()}"  # this target alone, whatever else runs
    target = targets.start([hs.program("deadlock"), hs.READY, token], ready_at=1)
    out = tmp_path / "mine"
    out.mkdir(mode=0o700)
    for name in ("report.txt", "n1.txt"):
        os.symlink(victim, out / name)  # root's own links (a previous run's, say): still not followed
    run = hs.run_hangscan(pdsh_args(f"{token[:-1]}[{token[-1]}]", "--output", out))
    assert run.rc == 0, run.describe()
    assert victim.read_text() == "victim\n"
    assert sorted(os.listdir(out)) == ["n1.txt", "report.html", "report.txt"]
    for name in ("n1.txt", "report.txt"):
        assert not os.path.islink(out / name)
        assert f"Process {target.pid}: " in (out / name).read_text()
    assert (out / "report.txt").read_text() == run.stdout
    hs.assert_runs_on(target.pid)


def test_gcore_dir_through_a_link_of_another_user_is_refused(targets, tmp_path):
    target = targets.start([hs.program("deadlock")])
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    os.symlink(real, link)
    os.lchown(link, hs.NOBODY, hs.NOBODY)
    why = "'link' on the way is a symbolic link of nobody (uid 65534); not followed"
    run = hs.run_hangscan(["gcore", "--pid", target.pid, "-o", link], parse_json=False)
    assert run.rc == 2, run.describe()
    assert run.stderr.splitlines() == [f"hangscan: refusing -o {link}: {why}", REFUSED_HINT]
    run = hs.run_hangscan(["dump", "--pid", target.pid, "--gcore", "--gcore-dir", link], parse_json=False)
    assert run.rc == 1, run.describe()
    host = os.uname().nodename.split(".")[0]
    assert run.stderr.splitlines() == [
        f"hangscan: no core of pid {target.pid} on {host} (representative): refusing --gcore-dir {link}: {why}",
        REFUSED_HINT]
    assert os.listdir(real) == []
    hs.assert_runs_on(target.pid)


def test_watchdog_refuses_a_bundle_dir_of_another_user(targets, tmp_path):
    """The old watchdog made DIR/stall-TIME with create_directories: a link planted under the
    next second's name sent the bundle (as root) into any directory."""
    target = targets.start([hs.program("deadlock")])
    out = tmp_path / "bundles"
    out.mkdir()
    os.chown(out, hs.NOBODY, hs.NOBODY)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    now = datetime.now(timezone.utc)
    for s in range(-5, 120):
        name = "stall-" + (now + timedelta(seconds=s)).strftime("%Y%m%dT%H%M%S")
        os.symlink(elsewhere, out / name)
        os.lchown(out / name, hs.NOBODY, hs.NOBODY)
    start = time.monotonic()
    run = hs.run_hangscan(["watch", "--ptrace", "--stall", "2", "--once", "--output", out, "--pid", target.pid],
                          parse_json=False, timeout=60)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [f"hangscan: refusing --output {out}: {NOBODY_OWNS}", REFUSED_HINT]
    assert time.monotonic() - start < 2.0
    assert os.listdir(elsewhere) == []


@pytest.fixture
def full_fs(tmp_path):
    """A 64 KiB tmpfs filled up, unmounted at the end."""
    mnt = tmp_path / "full"
    mnt.mkdir(mode=0o700)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mnt)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        try:
            with open(mnt / "filler", "wb") as f:
                while True:
                    f.write(b"x" * 4096)
                    f.flush()
        except OSError:
            pass
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.skipif(not shutil.which("pdsh"), reason="pdsh is not installed")
def test_a_full_disk_leaves_no_empty_file_and_says_why(full_fs):
    run = hs.run_hangscan(pdsh_args(NO_MATCH, "--output", full_fs), parse_json=False)
    assert run.rc == 2, run.describe()
    hint = (f"hint: free space in {full_fs} (df {full_fs}) or choose another --output DIR; "
            "no partial file was left there")
    errors = [line for line in run.stderr.splitlines() if "n1 warning" not in line]
    assert errors == [f"hangscan: cannot write {full_fs}/n1.txt: No space left on device", hint,
                      f"hangscan: cannot write {full_fs}/report.txt: No space left on device", hint,
                      f"hangscan: cannot write {full_fs}/report.html: No space left on device", hint], run.stderr
    assert os.listdir(full_fs) == ["filler"]


@pytest.mark.skipif(not shutil.which("pdsh"), reason="pdsh is not installed")
def test_a_failing_agent_keeps_its_own_reason(tmp_path):
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\necho 'hangscan: the agent cannot start here' >&2\n"
                     "echo 'hint: fix the agent' >&2\nexit 64\n")
    agent.chmod(0o755)
    run = hs.run_hangscan(pdsh_args("x", "--agent-path", agent, "--json"))
    assert run.rc == 2, run.describe()
    reason = run.doc["unreachable"][0]["reason"]
    assert reason.endswith("(agent printed: hangscan: the agent cannot start here; hint: fix the agent)"), reason
