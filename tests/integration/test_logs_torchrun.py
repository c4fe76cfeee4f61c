"""`dump --logs` on a real torchrun job whose rank the kernel OOM-kills (issue 35).

A single-node torchrun (gloo, CPU, 3 ranks; Debian's torch 1.13), the whole job in a memory
cgroup this test makes and removes: rank 2 grows past the limit and the kernel's OOM killer ends
it; torchrun reaps it and stops the others with SIGTERM, which they answer by saving a checkpoint
(tests/programs/torchrun_oom.py), so the job is captured between the death and torchrun's SIGKILL
30 s later. The verdict says torchrun is stopping them (its own log's lines), not that they wait
for the dead rank, and the kernel's death record carries the rank it was linked to. The oracles:
the kernel log's own record of the kill, and the line the rank wrote last (its stdout.log under
torchrun's --log_dir).
"""

import os
import re
import signal
import sys

import pytest

import hs_testlib as hs
from test_deaths import kernel_kill_line, rss_of_kill_line

sys.path.insert(0, str(hs.source_dir() / "tests" / "programs"))
import hs_rank_ready  # noqa: E402

TORCHRUN = "/usr/bin/torchrun"
WORLD, OOM = 3, 2


def skip_without_torchrun():
    import importlib.util
    if not os.access(TORCHRUN, os.X_OK) or importlib.util.find_spec("torch") is None:
        pytest.skip("torchrun is not installed (python3-torch)")


def start_and_oom(targets, cg, collector, logs, env, *extra):
    """Starts the job in `cg`, waits for every rank, then lets rank OOM grow past the cgroup's
    limit. Returns (job, pids, limit)."""
    # Debian's torchrun needs --redirects/--tee on Python 3.11 (1: each rank's stdout).
    job = targets.start(
        ["/bin/sh", "-c", f'echo $$ > {cg.path}/cgroup.procs && exec "$@"', "sh", TORCHRUN,
         "--standalone", "--nnodes", 1, "--nproc_per_node", WORLD, "--max_restarts", 0,
         "--redirects", 1, "--tee", 1, "--log_dir", logs,
         hs.program_source("torchrun_oom.py"), OOM, *extra],
        ready=None, main_parked=False, env=env)
    pids = collector.wait(range(WORLD), timeout=300, alive=job.alive)
    # The limit: what the job uses now and 256 MiB more, so only the growing rank meets it.
    limit = (cg.usage() >> 20) + 256 << 20
    with open(os.path.join(cg.path, cg.limit_file), "w") as fh:
        fh.write(str(limit))
    os.kill(pids[OOM], signal.SIGUSR1)
    return job, pids, limit


@pytest.fixture
def targets():
    with hs.TargetPool() as pool:
        yield pool


def test_torchrun_rank_oom_killed_is_named_with_the_kernels_record_and_its_last_log(targets, tmp_path):
    skip_without_torchrun()
    logs = tmp_path / "logs"
    ctl = str(tmp_path / "ctl")
    env = dict(os.environ, **{hs_rank_ready.CTL_ENV: ctl})
    with hs.MemoryCgroup(16 << 30) as cg, hs_rank_ready.ParkCollector(ctl) as collector:
        job, pids, limit = start_and_oom(targets, cg, collector, logs, env)
        # torchrun reaped the dead rank and sent the others SIGTERM: they save a checkpoint.
        collector.wait([100 + r for r in range(WORLD) if r != OOM], timeout=120, alive=job.alive)
        kill = kernel_kill_line(pids[OOM])
        run = hs.dump(job.pid, "--subprocesses", "--logs", str(logs), job.stderr_path)
        assert run.rc == 0, run.describe()
        doc = run.doc
        # The death, from the kernel's own record.
        [death] = doc["deaths"]
        assert death["pid"] == pids[OOM] and death["how"] == "oom-kill", death
        assert death["rank"] == OOM, death  # linked to the missing rank, as the text says
        # ... exactly: torchrun's own list of its workers (read from its memory) names the reaped
        # pid as local rank 2, and its living children's RANK - LOCAL_RANK is 0.
        assert death["rank_from"] == "launcher", death
        assert death["cgroup"] == cg.rel and death["limit_bytes"] == limit, death
        assert death["rss_bytes"] == rss_of_kill_line(kill), (death, kill)
        assert doc["missing_ranks"] == [OOM] and doc["suspects"] == [OOM]
        # Each rank's last words: the dead rank's own line; torchrun's stop line (a pid, given
        # its rank by the capture) for the others, beside where they stand.
        [out] = logs.glob(f"*/attempt_0/{OOM}/stdout.log")
        err = open(job.stderr_path).read().splitlines()
        checkpoint = f"save_checkpoint (torchrun_oom.py:{hs.hs_line('torchrun_oom.py', 'torchrun-oom-checkpoint')})"
        want = {OOM: (str(out), 1, "last_line", f"rank {OOM}: step 7: loading shard {OOM}", None)}
        for r in range(WORLD):
            if r != OOM:
                stop = ("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process "
                        f"{pids[r]} closing signal SIGTERM")
                want[r] = (job.stderr_path, 1 + err.index(stop), "torchrun_stop", stop, checkpoint)
        first_stop = min(want[r][1] for r in range(WORLD) if r != OOM)
        assert {e["rank"]: (e["file"], e["line"], e["kind"], e["text"], e["where"])
                for e in doc["last_logs"]} == want, doc["last_logs"]
        age = round(next(e for e in doc["last_logs"] if e["rank"] == OOM)["before_capture_s"])
        [reason] = doc["suspect_reasons"]
        # The same as data: the death finding's figures name torchrun's stop (no time printed).
        [found] = [f for f in doc["findings"] if f["kind"] == "death"]
        assert found["figures"]["stopped_by"] == {
            "by": "torchrun", "signal": "SIGTERM", "at": None,
            "source": f"{os.path.basename(job.stderr_path)}:{first_stop}"}, found
        assert sorted(doc["processes"][i]["rank"] for i in found["others"]) == [0, 1], found
        assert re.fullmatch(
            rf"rank {OOM} \(pid {pids[OOM]}\) was killed by the kernel OOM killer at \d\d:\d\d:\d\d "
            rf"\(memory cgroup {re.escape(cg.rel)}: limit {limit >> 20} MiB, "
            rf"rss {round(death['rss_bytes'] / (1 << 20))} MiB\); torchrun is stopping ranks 0-1 "
            rf"\(SIGTERM, {re.escape(os.path.basename(job.stderr_path))}:{first_stop}\), which are in "
            rf"{re.escape(checkpoint)}; last log: \"rank {OOM}: step 7: loading shard {OOM}\" "
            rf"\(stdout.log:1, {age} s before the dump\)", reason), reason
        for t in targets.targets:
            t.kill()


def test_torchrun_oom_kill_in_the_kernel_log_takes_its_rank_from_torchruns_summary(targets, tmp_path):
    """The same job to its end (the others exit on SIGTERM, so torchrun prints its failure summary
    and ends), read afterwards by `hangscan logs` with the kernel's record of the kill: the kernel
    names only a pid; torchrun's summary names that pid's rank, so the kill is rank 2's."""
    skip_without_torchrun()
    logs = tmp_path / "logs"
    ctl = str(tmp_path / "ctl")
    env = dict(os.environ, **{hs_rank_ready.CTL_ENV: ctl})
    with hs.MemoryCgroup(16 << 30) as cg, hs_rank_ready.ParkCollector(ctl) as collector:
        job, pids, _ = start_and_oom(targets, cg, collector, logs, env, "exit")
        assert job.proc.wait(timeout=120) == 1
    kill = kernel_kill_line(pids[OOM])
    kern = tmp_path / "kern.log"
    kern.write_text(kill + "\n")
    run = hs.run_hangscan(["logs", "--json", logs, job.stderr_path, kern])
    assert run.rc == 0, run.describe()
    events = run.doc["events"]
    [oom] = [e for e in events if e["kind"] == "kernel_oom"]
    assert (oom["pid"], oom["rank"], oom["line"]) == (pids[OOM], OOM, 1), oom
    [summary] = [e for e in events if e["kind"] == "torchrun_failure"]
    assert (summary["pid"], summary["rank"], summary["exit_code"]) == (pids[OOM], OOM, -9), summary
    died = [l for l in hs.run_hangscan(["logs", logs, job.stderr_path, kern]).stdout.splitlines()
            if l.startswith("died: ")]
    assert died == [
        f"died: rank {OOM}: torchrun root cause: exit code -9 (pid {pids[OOM]}) "
        f"({os.path.basename(job.stderr_path)}:{summary['line']})",
        f"died: rank {OOM}: kernel OOM killer killed pid {pids[OOM]} (python3.11) (kern.log:1)",
    ], died
