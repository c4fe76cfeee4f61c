"""`--logs`: a job's logs joined with a capture of it (issue 35, "The job's own words").

Real processes: three ranks (RANK/WORLD_SIZE in their environments, as torch scripts have)
each write a dated log file in Slurm's "%x-%j-%t.out" naming, then block; rank 2 in load_batch,
the others in wait_for_peers. `dump --logs DIR` must put rank 2's last line beside its stack in
its SUSPECT sentence, with how long before the dump it was written, and list every rank's last
line with its frame in the JSON (last_logs).
"""

import json
import re
import time
from pathlib import Path

import hs_testlib as hs

PY = "/usr/bin/python3"
WORLD, ODD = 3, 2


def start_ranks(targets, logs):
    pids = []
    for r in range(WORLD):
        t = targets.start([PY, hs.program_source("log_ranks.py"), hs.READY, logs / f"train-5-{r}.out",
                           r, ODD], env={"RANK": str(r), "WORLD_SIZE": str(WORLD), "PATH": "/usr/bin:/bin"})
        pids.append(t.pid)
    return pids


def test_dump_with_logs_puts_the_suspects_last_line_beside_its_stack(targets, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    started = time.time()  # before the ranks write their lines (dated 30 s before that moment)
    pids = start_ranks(targets, logs)
    batch, peers = hs.hs_line("log_ranks.py", "batch"), hs.hs_line("log_ranks.py", "peers")
    args = [a for p in pids for a in ("--pid", str(p))] + ["--logs", str(logs)]
    run = hs.run_hangscan(["dump", *args, "--json"])
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert doc["suspects"] == [ODD]
    last = {entry["rank"]: entry for entry in doc["last_logs"]}
    assert sorted(last) == [0, 1, 2]
    for r, entry in last.items():
        what = "loading batch 17 from shard-3" if r == ODD else "step 42 all_reduce"
        assert entry["file"] == str(logs / f"train-5-{r}.out")
        assert (entry["line"], entry["kind"]) == (2, "last_line")
        assert re.fullmatch(rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,000 INFO rank {r}: {what}", entry["text"])
        # Dated 30 s before the rank started; the dump came within the test's own time since.
        assert 30 <= entry["before_capture_s"] <= 31 + time.time() - started, entry
        func, line = ("load_batch", batch) if r == ODD else ("wait_for_peers", peers)
        assert entry["where"] == f"{func} (log_ranks.py:{line})"
    [reason] = doc["suspect_reasons"]
    age = round(last[ODD]["before_capture_s"])
    assert reason.endswith(f'; last log: "{last[ODD]["text"]}" (train-5-2.out:2, {age} s before the dump)'), reason
    assert reason.startswith("rank 2 is not in wait_for_peers with ranks 0-1: "), reason
    text = hs.run_hangscan(["dump", *args]).stdout.splitlines()
    [suspect] = [t for t in text if t.startswith("SUSPECT")]
    assert re.fullmatch(rf'SUSPECT rank 2 is not in wait_for_peers with ranks 0-1: .*load_batch '
                        rf'\(log_ranks.py:{batch}\); last log: "[^"]* INFO rank 2: loading batch 17 '
                        rf'from shard-3" \(train-5-2.out:2, 3\d s before the dump\)', suspect), suspect


def test_dump_with_unreadable_logs_says_so_and_still_reports(targets, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    pids = start_ranks(targets, logs)
    run = hs.run_hangscan(["dump", "--pid", str(pids[0]), "--logs", str(tmp_path / "none-*.out"),
                           "--json"])
    assert run.rc == 0, run.describe()
    assert "last_logs" not in run.doc
    assert run.stderr.splitlines() == [
        f"hangscan: --logs: {tmp_path}/none-*.out: no file matches this pattern",
        "hint: name log files, directories or glob patterns that exist and are readable"]


def test_watchdog_bundle_carries_each_ranks_last_line(targets, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    pids = start_ranks(targets, logs)
    out = tmp_path / "bundles"
    args = ["watch", "--ptrace", "--stall", "2", "--output", str(out), "--once", "--logs", str(logs)]
    for p in pids:
        args += ["--pid", str(p)]
    run = hs.run_hangscan(args, timeout=90)
    assert run.rc == 0, run.describe()
    m = re.search(r"capture written to (\S+)", run.stdout)
    assert m, run.describe()
    report = json.loads((Path(m.group(1)) / "report.json").read_text())
    assert report["suspects"] == [ODD]
    assert [(e["rank"], e["line"], e["kind"]) for e in report["last_logs"]] == [
        (0, 2, "last_line"), (1, 2, "last_line"), (2, 2, "last_line")]
    [reason] = report["suspect_reasons"]
    assert re.search(r'; last log: "[^"]* INFO rank 2: loading batch 17 from shard-3" '
                     r'\(train-5-2.out:2, 3\d s before the dump\)$', reason), reason
    assert f"SUSPECT {reason}" in (Path(m.group(1)) / "report.txt").read_text()
