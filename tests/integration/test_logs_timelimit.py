"""A real Slurm time limit read from the job's own output (issue 35).

A 3-node job of `--time=1` whose tasks hang (each says it waits, then sleeps) on a test cluster
of its own (its job ids start at its port base, so a cluster of another test running at the same
time is never confused with it: this test mostly waits and runs beside the others, outside the
`slurm` lock). slurmctld checks limits every 30 s, so Slurm kills the job 60-95 s after it starts;
then `hangscan logs` on the batch output: slurmstepd's `*** JOB N ON NODE CANCELLED AT T DUE TO
TIME LIMIT ***` line is an event and the verdict's first failure names it exactly. The fixture
of the same kind stays in tests/unit/logs/log_test.cpp (LogRealSlurm).
"""

import calendar
import re
import sys
import time

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "fanout"))
from slurm_testlib import SlurmCluster  # noqa: E402

NODES = 3


def test_a_job_killed_at_its_time_limit_is_named_from_slurmstepds_own_line(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n"
                      "srun sh -c 'echo \"task $SLURM_PROCID waiting\"; exec sleep 600'\n")
    script.chmod(0o755)
    with SlurmCluster(nodes=NODES, cgroup=True) as cluster:
        started = time.monotonic()
        job = cluster.run(["sbatch", "--parsable", f"-N{NODES}", "--ntasks-per-node=1", "--time=1",
                           "-o", str(tmp_path / "slurm-%j.out"), "-D", str(tmp_path), str(script)])
        job_id = job.stdout.strip().split(";")[0]
        try:
            while cluster.job_state(job_id):
                assert time.monotonic() - started < 150, f"job {job_id} still {cluster.job_state(job_id)}"
                time.sleep(1)
        finally:
            cluster.run(["scancel", job_id], check=False)
        ended = time.monotonic() - started
        print(f"job {job_id} ended {ended:.1f} s after sbatch")  # the limit is whole minutes
        assert 55 <= ended < 150, ended
    out = tmp_path / f"slurm-{job_id}.out"
    lines = out.read_text().splitlines()
    cancelled = [i for i, t in enumerate(lines) if "CANCELLED AT" in t]
    job_at = next(i for i in cancelled if f"*** JOB {job_id} ON " in lines[i])
    m = re.fullmatch(rf"slurmstepd-(n\d): error: \*\*\* JOB {job_id} ON (n\d) CANCELLED AT "
                     r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d) DUE TO TIME LIMIT \*\*\*", lines[job_at])
    assert m, lines
    run = hs.run_hangscan(["logs", str(out), "--json"])
    assert run.rc == 0, run.describe()
    events = run.doc["events"]
    [ev] = [e for e in events if e["kind"] == "slurm_cancelled" and e["what"] == f"job {job_id}"]
    assert (ev["line"], ev["host"], ev["op"], ev["rank"]) == (job_at + 1, m.group(2), "TIME LIMIT", None), ev
    assert ev["time"] == calendar.timegm(time.strptime(m.group(3), "%Y-%m-%dT%H:%M:%S")), ev  # as UTC
    text = hs.run_hangscan(["logs", str(out)]).stdout
    # The first failure: slurmstepd's first cancellation line (the job's, or its step's at the
    # same second when that one was written first).
    first = cancelled[0]
    what = f"job {job_id}" if first == job_at else f"step {job_id}.0"
    assert (f"first failure: no rank at slurm-{job_id}.out:{first + 1}: slurm: {what} "
            "cancelled (TIME LIMIT)\n") in text, text
    assert f"died: no rank: slurm: job {job_id} cancelled (TIME LIMIT) (slurm-{job_id}.out:{job_at + 1})\n" in text, text
