#!/usr/bin/env python3
"""`hangscan logs` on 10 GB of logs in 1,000 files, beside grep -c (and rg -c when installed).

usage: python3 tests/bench/bench_logs.py --build build [--files 1000] [--mib 10] [--runs 3]
                                         [--markdown]

Issue 35's goal: 10 GB of logs across 1,000 files read in under a minute on two cores.

What it does:
  1. writes FILES per-rank logs of MIB MiB each (Slurm's "train-7-R.out" naming) in a temporary
     directory: ordinary dated training lines, a warning now and then, and at the end of every
     rank but one the gloo timeout traceback the real job of tests/integration/test_logs.py
     prints, so the verdict has work to do (the silent rank is the suspect). One 10 MiB body is
     made once and each file is that body under a header of its own (distinct files, same bytes
     to read as distinct contents).
  2. times, alternating, RUNS runs each of `hangscan logs DIR --json` (the whole verdict), and
     of `grep -rc 'Timed out'` and `rg -c 'Timed out'` over the same files as the peer: the
     floor of reading the bytes and testing one keyword. Wall time, user+sys CPU and peak RSS
     come from each child's own rusage; the table gives medians.
The files are read from the page cache (they were just written and fit in memory here); the
page cache is not dropped (that would slow every other process on the machine). The directory
is removed at the end.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TIMEOUT_TB = (
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 51, in <module>\n'
    "    dist.all_reduce(t)\n"
    '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 1536, '
    "in all_reduce\n"
    "    work.wait()\n"
    "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 3000ms for "
    "recv operation to complete\n")


def body(size: int) -> bytes:
    lines, n, t = [], 0, datetime.datetime(2026, 11, 27, 10, 0, 0)
    step = 0
    while n < size:
        step += 1
        stamp = (t + datetime.timedelta(milliseconds=37 * step)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        if step % 97 == 0:
            s = f"{stamp} WARNING dataloader: worker 3 slow, batch {step} took 1.{step % 10}s\n"
        else:
            s = (f"{stamp} INFO train: step {step} loss {1.0 / step:.6f} lr 0.000300 "
                 f"tokens/s {40000 + step % 777} grad_norm {0.5 + step % 13 / 100:.3f}\n")
        lines.append(s)
        n += len(s)
    return "".join(lines).encode()


def make_logs(root: str, files: int, mib: int) -> int:
    common = body(mib << 20)
    total = 0
    for r in range(files):
        tail = b"" if r == files // 2 else TIMEOUT_TB.encode()
        data = f"rank {r} of {files}: starting\n".encode() + common + tail
        with open(os.path.join(root, f"train-7-{r}.out"), "wb") as f:
            f.write(data)
        total += len(data)
    return total


def run_one(argv: list[str]) -> dict:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execvp(argv[0], argv)
    _, status, ru = os.wait4(pid, 0)
    return {"wall": time.monotonic() - start, "cpu": ru.ru_utime + ru.ru_stime,
            "rss_mib": ru.ru_maxrss / 1024, "rc": os.waitstatus_to_exitcode(status)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--mib", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    hangscan = os.path.join(os.path.abspath(a.build), "hangscan")
    root = tempfile.mkdtemp(prefix="hs-bench-logs-")
    try:
        t0 = time.monotonic()
        total = make_logs(root, a.files, a.mib)
        print(f"wrote {a.files} files, {total / 1e9:.2f} GB in {time.monotonic() - t0:.1f} s",
              file=sys.stderr)
        check = subprocess.run([hangscan, "logs", root, "--json"], capture_output=True)
        doc = json.loads(check.stdout)
        assert doc["suspects"] == [a.files // 2], doc["suspects"]
        assert len(doc["failed"]) == a.files - 1
        tools = {"hangscan logs DIR --json": [hangscan, "logs", root, "--json"],
                 "grep -rc 'Timed out' DIR": ["grep", "-rc", "Timed out", root]}
        if shutil.which("rg"):
            tools["rg -c 'Timed out' DIR"] = ["rg", "-c", "Timed out", root]
        results: dict[str, list[dict]] = {k: [] for k in tools}
        for _ in range(a.runs):
            for name, argv in tools.items():
                results[name].append(run_one(argv))
        rows = []
        for name, runs in results.items():
            med = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "rss_mib")}
            rows.append((name, med["wall"], min(r["wall"] for r in runs),
                         max(r["wall"] for r in runs), med["cpu"], med["rss_mib"],
                         total / med["wall"] / 1e6))
        if a.markdown:
            print("| command | wall median (min-max) | CPU | peak RSS | MB/s |")
            print("|---|---|---|---|---|")
            for n, w, lo, hi, c, rss, mbs in rows:
                print(f"| `{n}` | {w:.1f} s ({lo:.1f}-{hi:.1f}) | {c:.1f} s | {rss:.0f} MiB | {mbs:.0f} |")
        else:
            for n, w, lo, hi, c, rss, mbs in rows:
                print(f"{n:32} wall {w:6.1f} s ({lo:.1f}-{hi:.1f})  cpu {c:6.1f} s  "
                      f"rss {rss:6.0f} MiB  {mbs:6.0f} MB/s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
