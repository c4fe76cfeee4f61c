#!/usr/bin/env python3
"""hangscan gcore against gdb's gcore on the same process, same run: time, pause, core size.

usage: sudo HS_BUILD_DIR=build python3 tests/bench/bench_gcore.py [--mib 2048] [--runs 3]

The target is tests/programs/py_big.py holding MIB MiB of filled bytearrays with threads
blocked at known lines. hangscan's pause is what it reports (stop to resume); gdb's gcore keeps
the process stopped for its whole run, so its pause is its wall time. Both cores are checked
to hold the same Python stacks (`hangscan core`). Prints the Markdown table of
docs/performance.md ("gcore").
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import hs_testlib as hs  # noqa: E402


def python_stacks(core):
    run = hs.run_hangscan(["core", core, "--json"], timeout=600)
    p = run.doc["processes"][0]
    return {t["tid"]: [(f["function"], f.get("line")) for f in t["frames"] if f["kind"] == "python"]
            for t in p["threads"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=2048)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="hs-bench-gcore-", dir="/var/tmp")
    rows = []
    try:
        with hs.TargetPool() as pool:
            t = pool.start(["/usr/bin/python3", str(hs.program_source("py_big.py")), hs.READY,
                            str(args.mib)], timeout=300)
            rss = int([l for l in open(f"/proc/{t.pid}/status") if l.startswith("VmRSS")][0].split()[1])
            for i in range(args.runs):
                d = os.path.join(work, f"hs{i}")
                os.mkdir(d)
                run = hs.run_hangscan(["gcore", "--pid", t.pid, "-o", d, "--json"], timeout=600)
                assert run.rc == 0, run.describe()
                hs_core = run.doc["path"]
                rows.append(("hangscan gcore", run.seconds, run.doc["pause_us"] / 1e6,
                             os.stat(hs_core).st_size, os.stat(hs_core).st_blocks * 512))
                g = os.path.join(work, f"gdb{i}")
                start = time.monotonic()
                subprocess.run(["gcore", "-o", g, str(t.pid)], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1200)
                secs = time.monotonic() - start
                gdb_core = f"{g}.{t.pid}"
                rows.append(("gdb gcore", secs, secs, os.stat(gdb_core).st_size,
                             os.stat(gdb_core).st_blocks * 512))
                if i == 0:
                    same = python_stacks(hs_core) == python_stacks(gdb_core)
                    print(f"python stacks equal in both cores: {same}", file=sys.stderr)
                    assert same
                os.unlink(gdb_core)
                shutil.rmtree(d)
            hs.assert_runs_on(t.pid)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"target: py_big.py, {args.mib} MiB of bytearrays, RSS {rss // 1024} MiB, 4 threads; "
          f"{args.runs} runs, median")
    print("| tool | wall time (s) | pause (s) | core size (MiB) | on disk (MiB) |")
    print("|---|---|---|---|---|")
    for tool in ("hangscan gcore", "gdb gcore"):
        rs = sorted((r for r in rows if r[0] == tool), key=lambda r: r[1])
        mid = rs[len(rs) // 2]
        print(f"| {tool} | {mid[1]:.2f} | {mid[2]:.3f} | {mid[3] / 2**20:.0f} | {mid[4] / 2**20:.0f} |")


if __name__ == "__main__":
    main()
