"""`hangscan logs` on the logs real jobs leave (issue 35, "The job's own words").

Each test runs a real torch.distributed (gloo, CPU) job on this machine to its failure, keeps
the logs it wrote where its launcher put them, and asserts the verdict hangscan reads from them:
  - one process per rank, stderr in Slurm-style files (train-77-R.out); rank 2 skips an
    all_reduce, the others time out after 3 s with gloo's own error: rank 2, which printed
    nothing, is named;
  - torchrun (--redirects 2 --tee 2: each rank's stderr.log and [defaultN]: lines) where rank 1
    raises: rank 1 is named, and torchrun's "root cause" (the first rank to exit) is shown to be
    a rank that only lost its peer.
NCCL, Slurm and kernel lines that cannot be produced here are unit-tested from their formats
(tests/unit/logs/log_test.cpp).
"""

import os
import re
import shutil
import subprocess
import time

import pytest

import hs_testlib as hs

PY = "/usr/bin/python3"


def need_torch():
    if subprocess.run([PY, "-c", "import torch.distributed"], capture_output=True).returncode:
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")


@pytest.fixture
def targets():
    with hs.TargetPool() as pool:
        yield pool


def test_gloo_timeout_logs_name_the_rank_that_printed_nothing(targets, tmp_path):
    need_torch()
    world, odd = 4, 2
    logs = tmp_path / "logs"
    logs.mkdir()
    store = tmp_path / "store"
    ranks = []
    for r in range(world):
        with open(logs / f"train-77-{r}.out", "wb") as out:
            proc = subprocess.Popen([PY, hs.program_source("gloo_timeout.py"), str(r), str(world),
                                     str(odd), str(store), "3"], stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        targets.targets.append(hs.Target([PY], proc, os.devnull))
        ranks.append(proc)
    for r, proc in enumerate(ranks):
        if r != odd:
            hs.communicate_within(proc, 180, f"rank {r} to time out")
    run = hs.run_hangscan(["logs", str(logs), "--json"])
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert doc["suspects"] == [odd]
    assert doc["silent"] == [odd]
    assert doc["failed"] == [0, 1, 3]
    assert doc["world_size"] == world
    first = doc["events"][doc["first_failure"]]
    assert first["rank"] == 0 and first["kind"] == "exception"
    # Rank 0's own timeout, or (when a peer timed out first and exited) gloo's word that the
    # peer closed the connection: which comes first depends on the machine's load.
    assert re.fullmatch(r"RuntimeError: \[\./gloo/transport/tcp/unbound_buffer\.cc:\d+\] Timed out "
                        r"waiting 3000ms for (recv|send) operation to complete|"
                        r"RuntimeError: \[\./gloo/transport/tcp/pair\.cc:\d+\] Connection closed by "
                        r"peer \[127\.0\.0\.1\]:\d+", first["what"]), first["what"]
    assert re.fullmatch(r"distributed_c10d\.py:\d+ in all_reduce", first["where"])
    text = hs.run_hangscan(["logs", str(logs)]).stdout.splitlines()
    assert text[0] == "hangscan logs: 4 files, 6 events, ranks 0-1,3 reported failures, world size 4"
    assert text[1] == f"SUSPECT rank 2 reported no failure while ranks 0-1,3 did ({first['what']})"


def test_torchrun_logs_name_the_rank_that_raised_not_torchruns_root_cause(targets, tmp_path):
    need_torch()
    torchrun = shutil.which("torchrun", path="/usr/bin")
    if torchrun is None:
        pytest.skip("torchrun is not installed (python3-torch)")
    logs = tmp_path / "logs"
    with open(tmp_path / "torchrun.err", "wb") as err:
        # Debian's torchrun needs --redirects/--tee on Python 3.11 (2: each rank's stderr).
        proc = subprocess.Popen([torchrun, "--standalone", "--nnodes", "1", "--nproc_per_node",
                                 "3", "--redirects", "2", "--tee", "2", "--log_dir", str(logs),
                                 hs.program_source("torchrun_raise.py"), "1"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        targets.targets.append(hs.Target([torchrun], proc, os.devnull))
        hs.communicate_within(proc, 240, "torchrun to end the failed job")
    assert proc.returncode == 1
    run = hs.run_hangscan(["logs", str(logs), str(tmp_path / "torchrun.err"), "--json"])
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert doc["suspects"] == [1]
    assert doc["raised"] == [1]
    assert doc["communication_only"] == [0, 2]
    line = hs.hs_line("torchrun_raise.py", "torchrun-raise")
    own = [e for e in doc["events"] if e["kind"] == "exception" and e["rank"] == 1]
    assert {(e["what"], e["where"]) for e in own} == {
        ("ValueError: rank 1: batch 17 is corrupt", f"torchrun_raise.py:{line} in load_batch")}
    summary = [e for e in doc["events"] if e["kind"] == "torchrun_failure"]
    assert sorted(e["rank"] for e in summary) == [0, 1, 2]
    assert all(e["exit_code"] == 1 and e["pid"] for e in summary)
    root = [e for e in summary if e["what"] == "root cause"]
    assert len(root) == 1
    text = hs.run_hangscan(["logs", str(logs), str(tmp_path / "torchrun.err")]).stdout
    suspect = [l for l in text.splitlines() if l.startswith("SUSPECT")]
    assert suspect == [
        f"SUSPECT rank 1 raised ValueError: rank 1: batch 17 is corrupt (torchrun_raise.py:{line} "
        f"in load_batch); ranks 0,2 failed only in communication ({_lost(doc)})"]
    if root[0]["rank"] != 1:  # torchrun names whichever rank exited first
        assert (f"note: torchrun's root cause is rank {root[0]['rank']}, which failed only in "
                "communication: the first to exit, not the first to fail") in text


def _lost(doc):
    return next(e["what"] for e in doc["events"]
                if e["kind"] == "exception" and e["rank"] in (0, 2))
