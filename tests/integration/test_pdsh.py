"""`hangscan pdsh`: the agent on several "hosts" through real pdsh, with -R exec and with ssh.

The ranks of a 4-rank ring all-reduce (tests/programs/ring_allreduce.py, rank 2 goes elsewhere)
are started here. Ranks 0-1 get `--rundir DIR/n1` and ranks 2-3 `--rundir DIR/n2` (both
symlinks to one directory), so a per-host --match with pdsh's %h picks each host's own ranks:
two hosts, two agents, one merged job. Over ssh a private sshd on 127.0.0.1 (own keys, own
port) serves the agent; 127.0.0.2 refuses connections and must be reported unreachable.
With --gcore a second pdsh round writes two cores, on n1 (rank 0, the majority's
representative) and n2 (rank 2, the odd one); when a chosen rank exits between the rounds,
its core is refused with a reason and the exit code is 1.
On a real pseudo-terminal (Python's pty) a 20-rank run over three "hosts", one of which never
starts its agent, shows the progress line and the early note on the odd rank, exactly.
"""

import json
import os
import pty
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "fanout"))
from slurm_testlib import PROGRAMS, PrivateSshd  # noqa: E402
import hs_rank_ready  # noqa: E402,I100  (tests/programs, put on sys.path by slurm_testlib)

WORLD = 4
ODD = 2


def dir_naming_no_host() -> Path:
    """A new directory whose path holds neither host name: the ranks' command lines hold it, and
    the HTML page's search by "n2" matches command lines too (a test's temporary directory once
    was /tmp/hs-tests-in2mes01: every rank matched)."""
    for base in (None, "/tmp"):
        for _ in range(20):
            path = tempfile.mkdtemp(prefix="hs-pdsh-", dir=base)
            if "n1" not in path.lower() and "n2" not in path.lower():
                return Path(path)
            os.rmdir(path)
    raise AssertionError("no temporary directory without n1 or n2 in its path")


class Ranks:
    """`world` ranks started directly (no launcher), parked, killed by pid at the end. Ranks
    below world/2 go to host n1, the others to n2 (their --rundir DIR/n1 or DIR/n2)."""

    def __init__(self, world=WORLD, odd=ODD):
        self.world, self.odd = world, odd
        self.proc_of = {}
        self.dir = dir_naming_no_host()
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
                half = self.world // 2
                for r in range(self.world):
                    host = "n1" if r < half else "n2"
                    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r % half), WORLD_SIZE=str(self.world),
                               **{hs_rank_ready.CTL_ENV: ctl})
                    self.procs.append(subprocess.Popen(
                        ["/usr/bin/python3", str(PROGRAMS / "ring_allreduce.py"), "-", "--rank-of-env",
                         "--world", str(self.world), "--odd", str(self.odd), "--rundir", str(self.dir / host)],
                        env=env, stdin=subprocess.DEVNULL, start_new_session=True))
                self.pids = collector.wait(range(self.world), timeout=60,
                                           alive=lambda: all(p.poll() is None for p in self.procs))
                self.proc_of = {p.pid: p for p in self.procs}
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


def test_exec_output_dir_and_html_file_hold_the_page(ranks, tmp_path):
    """The HTML report of pdsh (issue 34): --output DIR writes report.html beside the text files,
    --html FILE the same page; in headless Chromium the verdict names rank 2 and a search by a
    host or a pid picks its ranks."""
    browser = pytest.importorskip("browser")
    browser.chromium()
    out, page_file = tmp_path / "out", tmp_path / "job.html"
    run = hs.run_hangscan(["pdsh", "-R", "exec", "-w", "n[1-2]", "--match", f"--rundir {ranks.dir}/%h",
                           "--output", str(out), "--html", str(page_file), "--timeout", "60"])
    assert run.rc == 0, run.describe()
    assert sorted(os.listdir(out)) == ["n1.txt", "n2.txt", "report.html", "report.txt"]
    assert (out / "report.html").read_bytes() == page_file.read_bytes()
    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        verdict = page.eval("document.getElementById('verdict').innerText").splitlines()
        assert verdict[0] == run.stdout.splitlines()[1], (verdict, run.stdout[:300])
        assert verdict[0].startswith(f"SUSPECT rank {ODD} ")
        rows = "[...document.querySelectorAll('#processes tr.proc button')].map(e => e.textContent)"
        for query, members in (("n2", ["rank 2", "rank 3"]), (str(ranks.pids[1]), ["rank 1"])):
            page.eval(f"{{ const s = document.getElementById('search'); s.value = {query!r};"
                      " s.dispatchEvent(new Event('input')); }")
            assert page.eval(rows) == members, query
    assert set(b.requests) <= {page_file.as_uri()}, b.requests
    assert b.console_errors == []


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


def test_exec_gcore_writes_the_two_cores_on_their_hosts(ranks):
    with tempfile.TemporaryDirectory(prefix="hs-pdsh-gcore-") as d:
        run = hs.run_hangscan(["pdsh", "-R", "exec", "-w", "n[1-2]", "--match", f"--rundir {ranks.dir}/%h",
                               "--json", "--timeout", "60", "--gcore", "--gcore-dir", d])
        assert run.rc == 0, run.describe()
        check_report(run.doc, ranks, lambda r: "n1" if r < 2 else "n2")
        p0, p2 = ranks.pids[0], ranks.pids[ODD]
        names = sorted(os.listdir(d))
        assert names == [f"core.n1.rank0.{p0}", f"core.n2.rank2.{p2}"], (names, run.stderr)
        for n in names:
            assert stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode) == 0o600
        assert re.search(rf"^hangscan: core of rank 0 on n1 \(pid {p0}, representative\): {d}/core.n1.rank0.{p0} \(",
                         run.stderr, re.M), run.stderr
        assert re.search(rf"^hangscan: core of rank 2 on n2 \(pid {p2}, suspect\): {d}/core.n2.rank2.{p2} \(",
                         run.stderr, re.M), run.stderr
        rep = hs.run_hangscan(["core", "--json"] + [os.path.join(d, n) for n in names], timeout=300)
        assert rep.rc in (0, 1), rep.describe()
        assert sorted(p["rank"] for p in rep.doc["processes"]) == [0, ODD]
        odd = [p for p in rep.doc["processes"] if p["rank"] == ODD][0]
        main = hs.thread_by_tid(odd, odd["pid"])
        funcs = [(f["function"], f["line"]) for f in main["frames"] if f["kind"] == "python"]
        assert ("wait_for_checkpoint", hs.hs_line("ring_allreduce.py", "odd")) in funcs, funcs
    for pid in ranks.pids.values():
        hs.assert_runs_on(pid)


def test_exec_gcore_rank_gone_between_the_rounds():
    # Own ranks: one of them is killed. The --remote-setup script runs before every agent; it
    # counts the agents started so far, and from the third on (the core round: round one
    # starts exactly two) it kills the odd rank first, so the agent finds it gone. Only the
    # suspect is asked for: the ring's other ranks end too once a neighbour is gone.
    with Ranks() as own, tempfile.TemporaryDirectory(prefix="hs-pdsh-gcore-") as d:
        victim = own.pids[ODD]
        count = own.dir / "agents-started"
        count.touch()
        setup = own.dir / "kill-in-round-two.sh"
        setup.write_text(f"n=$(wc -l < '{count}')\necho x >> '{count}'\n"
                         f"if [ \"$n\" -ge 2 ]; then kill -9 {victim} 2>/dev/null; "
                         f"while kill -0 {victim} 2>/dev/null && ! grep -q '^{victim} .* Z ' /proc/{victim}/stat; "
                         f"do sleep 0.01; done; fi\n")
        run = hs.run_hangscan(["pdsh", "-R", "exec", "-w", "n[1-2]", "--match", f"--rundir {own.dir}/%h",
                               "--remote-setup", str(setup), "--json", "--timeout", "60",
                               "--gcore", "suspects", "--gcore-dir", d])
        assert run.rc == 1, run.describe()
        check_report(run.doc, own, lambda r: "n1" if r < 2 else "n2")
        assert count.read_text() == "x\nx\nx\n"   # two agents, then one for the core round
        assert os.listdir(d) == [], run.stderr
        assert re.search(rf"^hangscan: no core of rank 2 on n2 \(pid {victim}, suspect\): pid {victim} is "
                         rf"(a zombie|gone): it exited after the capture$", run.stderr, re.M), run.stderr
        assert "hangscan: 0 of 1 cores written" in run.stderr, run.stderr
        assert own.proc_of[victim].wait(timeout=10) == -signal.SIGKILL


def on_a_terminal(args, timeout=120.0):
    """Runs hangscan with stderr on a real pseudo-terminal (stdout a pipe, as `hangscan ... > r.json`
    from a shell). Returns (exit code, stdout, every byte the terminal received)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([hs.hangscan_bin()] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, start_new_session=True)
    os.close(slave)
    received = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        out, _ = hs.communicate_within(proc, timeout, f"hangscan {args}")
        reader.join(timeout=10)
        assert not reader.is_alive(), "the terminal was still open after hangscan exited"
    finally:
        os.close(master)
    return proc.returncode, out.decode(), received.decode()


def rendered(received):
    """The lines a terminal shows for `received`: \r returns to column 0, \n starts a new line,
    ESC[K clears to the end of the line, other characters overwrite. Any other escape fails."""
    lines, col = [""], 0
    i = 0
    while i < len(received):
        c = received[i]
        if received.startswith("\x1b[K", i):
            lines[-1] = lines[-1][:col]
            i += 3
            continue
        assert c != "\x1b", f"unexpected escape at {i}: {received[i:i + 8]!r}"
        if c == "\r":
            col = 0
        elif c == "\n":
            lines.append("")
            col = 0
        else:
            lines[-1] = lines[-1][:col] + c + lines[-1][col + 1:]
            col += 1
        i += 1
    return lines


def test_progress_and_early_note_on_a_real_terminal():
    # 20 ranks on n1 (0-9, rank 2 odd) and n2 (10-19); n3's agent never starts (its remote
    # setup exits when the command line names n3's rundir): "2/3 nodes answered, 1 unreachable".
    # 1 odd rank in 10 or 20 is within EarlySuspects' 5%, so the early note names rank 2 whichever
    # node's document is read first.
    world = 20
    with Ranks(world=world) as own:
        setup = own.dir / "fail-on-host-three.sh"
        setup.write_text('case "$(tr \'\\0\' \' \' < /proc/$$/cmdline)" in *"/n3 "*|*"/n3\'"*) exit 3;; esac\n')
        rc, out, received = on_a_terminal(
            ["pdsh", "-R", "exec", "-w", "n[1-3]", "--match", f"--rundir {own.dir}/%h",
             "--remote-setup", str(setup), "--timeout", "60", "--json"])
        assert rc == 1, (rc, received)
        doc = json.loads(out)
        assert doc["suspects"] == [ODD]
        assert [u["host"] for u in doc["unreachable"]] == ["n3"]
        # The progress line, every time it was drawn, in order: each node once, then the verdict.
        drawn = re.findall(r"\r(hangscan: \d+/\d+ nodes answered[^\r\x1b]*)\x1b\[K", received)
        drawn = [d for d in drawn if "early:" not in d]
        assert drawn == ["hangscan: 1/3 nodes answered", "hangscan: 2/3 nodes answered",
                         "hangscan: 2/3 nodes answered, 1 unreachable"], received
        assert received.count("\x1b[K") == 4, received  # three progress lines and one note
        odd_line = hs.hs_line("ring_allreduce.py", "odd")
        recv_line = hs.hs_line("ring_allreduce.py", "recv")
        ring = PROGRAMS / "ring_allreduce.py"
        note = re.compile(rf"hangscan: early: rank 2 \(node n1\) differs: in wait_for_checkpoint "
                          rf"\({re.escape(str(ring))}:{odd_line}\); (9 of 10|19 of 20) ranks read so far are in "
                          rf"all_reduce \({re.escape(str(ring))}:{recv_line}\)")
        screen = [line for line in rendered(received) if line]
        notes = [line for line in screen if "early:" in line]
        assert len(notes) == 1 and note.fullmatch(notes[0]), screen
        rest = [line for line in screen if "early:" not in line]
        assert rest[0] == "hangscan: 2/3 nodes answered, 1 unreachable", screen
        assert rest[1] == "hangscan: node n3 unreachable: pdsh: sh exited with exit code 3", screen
        assert rest[2] == "hint: 2 of 3 nodes reported; check the others with 'scontrol show node NAME' or ssh, " \
                          "or raise --timeout", screen
        assert len(rest) == 3, screen
