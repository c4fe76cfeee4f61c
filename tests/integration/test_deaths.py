"""How the dead died (issue: the story of a hang): one sentence per dead rank, from its exit
status and the kernel log, checked against the kernel's own records.

Targets: ring_allreduce.py with --zombie (killed, left unreaped) or --kill (killed and reaped),
by SIGKILL from the launcher or by a memory cgroup's OOM killer (--oom-cgroup). The OOM tests
create a memory cgroup with a limit and remove it afterwards; the oracle is the kernel log's
own "Killed process" line, read by the test.
"""

import os
import re
import resource
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hs_testlib as hs  # noqa: E402

PYTHON = "/usr/bin/python3"
RING = hs.program_source("ring_allreduce.py")
LIMIT = 100 << 20
DONE = hs.hs_line("ring_allreduce.py", "done")


def start_ring(pool, *args):
    return pool.start([PYTHON, RING, hs.READY, "--world", 4, "--odd", -1, *args], ready="pipe", timeout=120)


def last_kernel_record(matches):
    """The last message of the kernel log (/dev/kmsg) for which `matches` is true, else None."""
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    found = None
    try:
        while True:
            try:
                rec = os.read(fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            msg = rec.split(";", 1)[-1]
            if matches(msg):
                found = msg
    finally:
        os.close(fd)
    return found


def kernel_kill_line(pid):
    """The kernel log's own record of the OOM kill of `pid` (the oracle)."""
    found = last_kernel_record(lambda msg: re.search(rf"Killed process {pid} \(", msg))
    assert found, f"no OOM kill of {pid} in the kernel log"
    return found


def kernel_segfault_line(pid, comm):
    """The kernel log's own segfault record of `pid` (the oracle), e.g. "python3[41]: segfault at 0 ..."."""
    found = last_kernel_record(lambda msg: msg.startswith(f"{comm}[{pid}]: segfault at "))
    assert found, f"no segfault of {comm}[{pid}] in the kernel log"
    return found


def rss_of_kill_line(line):
    return sum(int(re.search(rf"{k}:(\d+)kB", line).group(1)) for k in ("anon-rss", "file-rss", "shmem-rss")) << 10


def test_zombie_killed_by_a_signal_is_one_sentence(targets):
    job = start_ring(targets, "--zombie", 1)
    run = hs.dump(job.pid, "--subprocesses")
    assert run.rc in (0, 1), run.describe()
    zombie = next(p for p in run.doc["processes"] if p["state"] == "Z")
    assert zombie["death"]["how"] == "killed" and zombie["death"]["signal"] == 9
    assert zombie["death"]["signal_name"] == "SIGKILL" and zombie["death"]["core_dumped"] is False
    assert zombie["death"]["evidence"] == ["exit status (/proc/PID/stat)"]
    assert run.doc["suspect_reasons"] == [
        f"rank 1 (pid {zombie['pid']}) was killed by SIGKILL (a zombie: not reaped by pid {job.pid}); "
        f"ranks 0,2-3 wait for it in wait_for_work (ring_allreduce.py:{DONE})"]
    assert run.doc["suspects"] == [1] and run.doc["missing_ranks"] == [1]


def test_oom_killed_zombie_names_cgroup_limit_and_rss(targets):
    with hs.MemoryCgroup(LIMIT) as cg:
        job = start_ring(targets, "--zombie", 2, "--oom-cgroup", cg.path)
        run = hs.dump(job.pid, "--subprocesses")
        zombie = next(p for p in run.doc["processes"] if p["state"] == "Z")
        pid = zombie["pid"]
        line = kernel_kill_line(pid)
        death = zombie["death"]
        assert death["how"] == "oom-kill" and death["signal"] == 9
        assert death["cgroup"] == cg.rel and death["limit_bytes"] == LIMIT, death
        assert death["rss_bytes"] == rss_of_kill_line(line), (death, line)
        assert death["evidence"] == ["exit status (/proc/PID/stat)", "kernel log"]
        reason = run.doc["suspect_reasons"]
        assert len(reason) == 1, reason
        rss_mib = round(death["rss_bytes"] / (1 << 20))
        assert re.fullmatch(
            rf"rank 2 \(pid {pid}\) was killed by the kernel OOM killer at \d\d:\d\d:\d\d "
            rf"\(memory cgroup {re.escape(cg.rel)}: limit 100 MiB, rss {rss_mib} MiB\) "
            rf"\(a zombie: not reaped by pid {job.pid}\); ranks 0-1,3 wait for it in wait_for_work "
            rf"\(ring_allreduce.py:{DONE}\)", reason[0]), reason[0]
        for t in targets.targets:
            t.kill()


def test_oom_killed_and_reaped_rank_is_found_in_the_kernel_log(targets):
    with hs.MemoryCgroup(LIMIT) as cg:
        job = start_ring(targets, "--kill", 3, "--oom-cgroup", cg.path)
        run = hs.dump(job.pid, "--subprocesses")
        assert run.doc["missing_ranks"] == [3]
        assert len(run.doc["deaths"]) == 1, run.doc["deaths"]
        death = run.doc["deaths"][0]
        line = kernel_kill_line(death["pid"])
        assert death["how"] == "oom-kill" and death["comm"] == "python3"
        assert death["cgroup"] == cg.rel and death["rss_bytes"] == rss_of_kill_line(line)
        reason = run.doc["suspect_reasons"]
        assert len(reason) == 1 and reason[0].startswith(
            f"rank 3 (pid {death['pid']}) was killed by the kernel OOM killer at "), reason
        assert reason[0].endswith(f"; ranks 0-2 wait for it in wait_for_work (ring_allreduce.py:{DONE})")
        assert run.doc["suspects"] == [3]
        for t in targets.targets:
            t.kill()


def test_segfaulted_zombie_names_its_crash_and_the_core_command(targets):
    """A rank that dies of a real segfault with its core written: the kernel log's segfault line
    and the core file the kernel wrote (the oracle: the file itself), read with `hangscan core`."""
    import core_testlib
    with core_testlib.CoreDir() as cores:
        job = start_ring(targets, "--zombie", 1, "--segv")
        run = hs.dump(job.pid, "--subprocesses")
        zombie = next(p for p in run.doc["processes"] if p["state"] == "Z")
        pid = zombie["pid"]
        death = zombie["death"]
        core = cores.core_of(pid)
        assert core.exists(), list(cores.path.iterdir())
        assert death["how"] == "segfault" and death["core_dumped"] is True, death
        assert death["core"] == str(core), death
        assert death["evidence"] == ["exit status (/proc/PID/stat)", "kernel log"], death
        [reason] = run.doc["suspect_reasons"]
        assert re.fullmatch(
            rf"rank 1 \(pid {pid}\) crashed at \d\d:\d\d:\d\d: segfault at 0 ip [0-9a-f]+ sp [0-9a-f]+ error \d+ "
            rf"in \S+; read its core with: hangscan core {re.escape(str(core))} "
            rf"\(a zombie: not reaped by pid {job.pid}\); ranks 0,2-3 wait for it in wait_for_work "
            rf"\(ring_allreduce.py:{DONE}\)", reason), reason
        for t in targets.targets:
            t.kill()


def test_unrelated_segfault_of_the_same_command_is_not_the_jobs(targets):
    """A python3 outside the job's process tree segfaults on the node during the job's window while
    the job's rank 2 is OOM-killed in the job's memory cgroup and reaped: only the OOM kill is the
    job's death and its suspect; the stranger is one info note, never a death or a suspect."""
    with hs.MemoryCgroup(LIMIT) as cg:
        job = start_ring(targets, "--kill", 2, "--oom-cgroup", cg.path)
        stranger = subprocess.Popen(
            [PYTHON, "-c", "import ctypes; ctypes.string_at(0)"], stdin=subprocess.DEVNULL,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        assert stranger.wait(timeout=60) == -signal.SIGSEGV
        line = kernel_segfault_line(stranger.pid, "python3")   # the same command as the ranks
        run = hs.dump(job.pid, "--subprocesses")
        assert run.rc in (0, 1), run.describe()
        assert run.doc["missing_ranks"] == [2]
        assert len(run.doc["deaths"]) == 1, run.doc["deaths"]
        death = run.doc["deaths"][0]
        assert death["pid"] != stranger.pid and death["comm"] == "python3"
        kill = kernel_kill_line(death["pid"])
        assert death["how"] == "oom-kill" and death["cgroup"] == cg.rel
        assert death["rss_bytes"] == rss_of_kill_line(kill)
        assert run.doc["suspects"] == [2]
        [reason] = run.doc["suspect_reasons"]
        assert reason.startswith(f"rank 2 (pid {death['pid']}) was killed by the kernel OOM killer at "), reason
        assert reason.endswith(f"; ranks 0-1,3 wait for it in wait_for_work (ring_allreduce.py:{DONE})"), reason
        notes = [d for d in run.doc["diagnostics"] if "not linked to the job" in d["message"]]
        assert len(notes) == 1 and notes[0]["severity"] == "info", run.doc["diagnostics"]
        assert f"pid {stranger.pid} (python3) by SIGSEGV" in notes[0]["message"], (notes, line)
        assert f"pid {death['pid']} (" not in notes[0]["message"]
        for t in targets.targets:
            t.kill()


def torchrun_node(targets, cg, node_rank, port, log_dir, env):
    """One "node" of a 2-node torchrun job (static rendezvous on 127.0.0.1:port, 2 workers per
    node, gloo), started inside memory cgroup `cg` (before torchrun runs: its workers are
    born there)."""
    torchrun = "/usr/bin/torchrun"
    gloo = hs.program_source("hang_gloo.py")
    return targets.start(
        ["/bin/sh", "-c", f'echo $$ > {cg.path}/cgroup.procs && exec "$@"', "sh", torchrun,
         "--nnodes", 2, "--node_rank", node_rank, "--nproc_per_node", 2, "--master_addr", "127.0.0.1",
         "--master_port", port, "--max_restarts", 0, "--redirects", 1, "--tee", 1, "--log_dir", log_dir,
         gloo, "-", "--launcher", "torchrun", "--odd", -1, "--oom-rank", 3],
        ready=None, main_parked=False, env=env)


def test_torchrun_worker_oom_killed_and_reaped(targets, tmp_path):
    """A 2-node torchrun job (4 ranks, both "nodes" on this machine, the whole job in one memory
    cgroup as a batch system would put it): rank 3 on node 1 is OOM-killed. Node 1's torchrun reaps
    it, tears down rank 2 (SIGTERM) and waits in its exit barrier; node 0's ranks 0-1 wait at a barrier through the
    job's store for ever. (Ranks waiting in a gloo all_reduce instead fail at once when a peer's
    connection closes, and torchrun then ends the whole job: nothing is left to dump.)
    What the user sees from node 0: ranks 0-1 waiting, ranks 2-3 missing, and the OOM kill in the
    job's cgroup, with which rank it was left open (two ranks are missing, one death is known). The
    oracles: the kernel's own OOM record of the pid that rank 3 reported as its own."""
    import importlib.util
    sys.path.insert(0, str(hs.source_dir() / "tests" / "programs"))
    import hs_rank_ready
    import socket
    if not os.access("/usr/bin/torchrun", os.X_OK) or importlib.util.find_spec("torch") is None:
        pytest.skip("torchrun is not installed (python3-torch)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctl = str(tmp_path / "ctl")
    env = dict(os.environ, **{hs_rank_ready.CTL_ENV: ctl})
    with hs.MemoryCgroup(16 << 30) as cg, hs_rank_ready.ParkCollector(ctl) as collector:
        node0 = torchrun_node(targets, cg, 0, port, tmp_path / "logs0", env)
        node1 = torchrun_node(targets, cg, 1, port, tmp_path / "logs1", env)
        pids = collector.wait(range(4), timeout=400, alive=lambda: node0.alive() and node1.alive())
        # The limit: what the job uses now and 256 MiB more, so only the growing rank meets it.
        limit = (cg.usage() >> 20) + 256 << 20
        with open(os.path.join(cg.path, cg.limit_file), "w") as fh:
            fh.write(str(limit))
        os.kill(pids[3], signal.SIGUSR1)
        # Node 1's torchrun reaps rank 3, ends rank 2 (SIGTERM), then waits in its exit barrier
        # for node 0's agent (up to 300 s): rank 2 gone is what says the teardown happened.
        end = time.monotonic() + 120
        while os.path.exists(f"/proc/{pids[2]}") or os.path.exists(f"/proc/{pids[3]}"):
            assert time.monotonic() < end, "node 1's torchrun did not end its workers"
            time.sleep(0.1)
        kill = kernel_kill_line(pids[3])  # the kernel's own record of rank 3's OOM kill
        run = hs.dump(node0.pid, "--subprocesses")
        assert run.rc == 0, run.describe()  # every process of the report was captured
        doc = run.doc
        assert sorted(p["rank"] for p in doc["processes"] if p["role"] == "rank") == [0, 1]
        assert doc["missing_ranks"] == [2, 3]
        [death] = doc["deaths"]
        comm = re.search(rf"Killed process {pids[3]} \(([^)]*)\)", kill).group(1)
        assert death["pid"] == pids[3] and death["how"] == "oom-kill" and death["comm"] == comm, death
        assert death["cgroup"] == cg.rel and death["limit_bytes"] == limit, death
        assert death["rss_bytes"] == rss_of_kill_line(kill), (death, kill)
        assert death["rank"] is None
        [reason] = [r for r in doc["suspect_reasons"] if f"pid {pids[3]}" in r]
        assert re.fullmatch(
            rf"pid {pids[3]} \({re.escape(comm)}\) was killed by the kernel OOM killer at \d\d:\d\d:\d\d "
            rf"\(memory cgroup {re.escape(cg.rel)}: limit {human(limit)}, rss {human(death['rss_bytes'])}\) "
            rf"while ranks 2-3 went missing; which rank it was is not known; ranks 0-1 are in oom_step "
            rf"\(hang_gloo.py:{hs.hs_line('hang_gloo.py', 'gloo-store-barrier')}\)",
            reason), reason
        for t in targets.targets:
            t.kill()


def human(size):
    """A size as hangscan writes it in a sentence: MiB, from 1 GiB on GiB with one decimal (the
    test's cgroup limit is what the job uses plus 256 MiB, on either side of 1 GiB)."""
    mib = size / (1 << 20)
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"
