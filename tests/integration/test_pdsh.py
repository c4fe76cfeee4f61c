"""`hangscan pdsh`: the agent on several "hosts" through real pdsh, with -R exec and with ssh.

The ranks of a 4-rank ring all-reduce (tests/programs/ring_allreduce.py, rank 2 goes elsewhere)
are started here. Ranks 0-1 get `--rundir DIR/n1` and ranks 2-3 `--rundir DIR/n2` (both
symlinks to one directory), so a per-host --match with pdsh's %h picks each host's own ranks:
two hosts, two agents, one merged job. Over ssh a private sshd on 127.0.0.1 (own keys, own
port) serves the agent; 127.0.0.2 refuses connections and must be reported unreachable.
"""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "fanout"))
from slurm_testlib import PROGRAMS, PrivateSshd  # noqa: E402
import hs_rank_ready  # noqa: E402,I100  (tests/programs, put on sys.path by slurm_testlib)

WORLD = 4
ODD = 2


class Ranks:
    """WORLD ranks started directly (no launcher), parked, killed by pid at the end."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="hs-pdsh-"))
        self.procs = []
        self.pids = {}

    def __enter__(self):
        ring = self.dir / "ring"
        ring.mkdir()
        for host in ("n1", "n2"):
            os.symlink(ring, self.dir / host)
        ctl = str(self.dir / "ctl")
        try:
            with hs_rank_ready.ParkCollector(ctl) as collector:
                for r in range(WORLD):
                    host = "n1" if r < 2 else "n2"
                    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r % 2), WORLD_SIZE=str(WORLD),
                               **{hs_rank_ready.CTL_ENV: ctl})
                    self.procs.append(subprocess.Popen(
                        ["/usr/bin/python3", str(PROGRAMS / "ring_allreduce.py"), "-", "--rank-of-env",
                         "--world", str(WORLD), "--odd", str(ODD), "--rundir", str(self.dir / host)],
                        env=env, stdin=subprocess.DEVNULL, start_new_session=True))
                self.pids = collector.wait(range(WORLD), timeout=60,
                                           alive=lambda: all(p.poll() is None for p in self.procs))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        subprocess.run(["rm", "-rf", str(self.dir)])


@pytest.fixture(scope="module")
def ranks():
    with Ranks() as r:
        yield r


def check_report(doc, ranks, host_of):
    got = sorted((p["rank"], p["host"], p["pid"]) for p in doc["processes"] if p["role"] == "rank")
    assert got == [(r, host_of(r), ranks.pids[r]) for r in range(WORLD)], doc["processes"]
    assert doc["suspects"] == [ODD]
    assert doc["suspect_members"] == [{"host": host_of(ODD), "pid": ranks.pids[ODD], "rank": ODD}]


def test_exec_two_hosts(ranks):
    match = f"--rundir {ranks.dir}/%h"
    run = hs.run_hangscan(["pdsh", "-R", "exec", "-w", "n[1-2]", "--match", match, "--json", "--timeout", "60"])
    assert run.rc == 0, run.describe()
    check_report(run.doc, ranks, lambda r: "n1" if r < 2 else "n2")


def test_exec_hostfile_and_remote_setup(ranks):
    hostfile = ranks.dir / "hosts"
    hostfile.write_text("# DeepSpeed style\nn1 slots=2\nn2 slots=2\n")
    marker = ranks.dir / "setup-ran"
    setup = ranks.dir / "setup's env.sh"   # a quote in the name: quoting must hold
    setup.write_text(f"touch '{marker}'\nexport HS_SETUP=1\n")
    run = hs.run_hangscan(["pdsh", "-R", "exec", "--hostfile", str(hostfile), "--remote-setup", str(setup),
                           "--match", f"--rundir {ranks.dir}/%h", "--json", "--timeout", "60"])
    assert run.rc == 0, run.describe()
    assert marker.exists()
    check_report(run.doc, ranks, lambda r: "n1" if r < 2 else "n2")


def test_exec_failing_remote_setup_is_unreachable(ranks):
    run = hs.run_hangscan(["pdsh", "-R", "exec", "-w", "n1", "--remote-setup", str(ranks.dir / "missing.sh"),
                           "--match", "x", "--json", "--timeout", "30"])
    assert run.rc == 2, run.describe()
    assert [u["host"] for u in run.doc["unreachable"]] == ["n1"]
    assert "missing.sh" in run.doc["unreachable"][0]["reason"], run.doc["unreachable"]


def test_bad_host_list_is_a_usage_error():
    run = hs.run_hangscan(["pdsh", "-w", "n[1-3;reboot]", "--match", "x"])
    assert run.rc == 64, run.describe()
    run = hs.run_hangscan(["pdsh", "-w", "n1;reboot", "--match", "x"])
    assert run.rc == 64, run.describe()
    assert "host name 'n1;reboot' contains ';'" in run.stderr


def test_ssh_with_an_unreachable_host(ranks):
    with PrivateSshd() as sshd:
        env = sshd.env()
        run = hs.run_hangscan(["pdsh", "-w", "127.0.0.1,127.0.0.2", "--match", f"--rundir {ranks.dir}/n",
                               "--json", "--timeout", "60"], env=env)
    assert run.rc == 1, run.describe()
    check_report(run.doc, ranks, lambda r: "127.0.0.1")
    assert [u["host"] for u in run.doc["unreachable"]] == ["127.0.0.2"]
    assert "Connection refused" in run.doc["unreachable"][0]["reason"] or \
        "exit code 255" in run.doc["unreachable"][0]["reason"], run.doc["unreachable"]
