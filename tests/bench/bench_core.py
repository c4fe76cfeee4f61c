#!/usr/bin/env python3
"""`hangscan core` against eu-stack and gdb on cores of a real torch job, same run.

usage: sudo python3 tests/bench/bench_core.py --build build [--runs 5] [--world 32]
                                              [--cores-dir DIR] [--markdown]

Issue #5's goals: on a >= 200 MB core of a torch process, `hangscan core` no slower than
`eu-stack --core` (which shows no Python), and 32 cores of the same program in < 4x the time
of one.

What it does:
  1. starts tests/programs/hang_gloo.py with WORLD ranks (torch.distributed, gloo, CPU; rank 2
     skips an all_reduce, the others wait in it), and writes a gdb `gcore` of every rank: WORLD
     distinct processes of one program, each core ~430 MB. The job is then killed.
     With --cores-dir DIR the cores are kept there and reused by the next run (making 32 cores
     takes minutes); without it they go to a temporary directory that is removed.
  2. checks every tool's answer once (the expected frames are there) before timing anything.
  3. times, alternating tools, --runs runs each: `hangscan core` on rank 0's core,
     `eu-stack --core` (plain, and with -i -s: inline frames and source lines), gdb
     `thread apply all bt` + `thread apply all py-bt` in one batch, and `hangscan core` over
     all WORLD cores. Each run is one child process: wall time, user+sys CPU and peak RSS come
     from its own wait4() rusage. The table gives medians.
No network for anyone (DEBUGINFOD_URLS empty). Nothing is left running; kernel.core_pattern
is not touched (gcore writes the cores itself).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import hs_testlib as hs  # noqa: E402

PYTHON = "/usr/bin/python3"
EXE = os.path.realpath(PYTHON)   # /usr/bin/python3.11: the executable eu-stack and gdb need
ODD = 2


class Measure:
    def __init__(self, wall: float, cpu: float, rss_kb: int, rc: int, out: str, err: str):
        self.wall, self.cpu, self.rss_kb, self.rc, self.out, self.err = wall, cpu, rss_kb, rc, out, err


def run_measured(argv: list[str], timeout: float = 900.0) -> Measure:
    """One child, its own rusage (wait4), output kept in temporary files."""
    env = dict(os.environ, DEBUGINFOD_URLS="")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                start_new_session=True)
        deadline = start + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)
                pid, status, ru = os.wait4(proc.pid, 0)
                raise AssertionError(f"{argv} did not finish within {timeout} s")
            time.sleep(0.002)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measure(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, proc.returncode,
                       out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def make_cores(world: int, cores_dir: Path) -> dict[int, Path]:
    """rank -> gcore of that rank, made from one hang_gloo.py job (or reused)."""
    index = cores_dir / "ranks.json"
    if index.exists():
        ranks = {int(r): cores_dir / name for r, name in json.loads(index.read_text()).items()}
        if len(ranks) == world and all(p.exists() for p in ranks.values()):
            print(f"reusing {world} cores in {cores_dir}", file=sys.stderr)
            return ranks
    with hs.TargetPool() as pool:
        job = pool.start([PYTHON, str(hs.program_source("hang_gloo.py")), hs.READY,
                          "--launcher", "spawn", "--world", world, "--odd", ODD],
                         ready="pipe", timeout=60 + 20 * world)
        live = hs.dump(job.pid, "--subprocesses", timeout=300)
        assert live.rc in (0, 1), live.describe()
        pids = {p["rank"]: p["pid"] for p in live.doc["processes"] if p.get("role") == "rank"}
        assert sorted(pids) == list(range(world)), sorted(pids)
        start = time.monotonic()

        def one(rank: int) -> tuple[int, Path]:
            prefix = cores_dir / f"core.rank{rank}"
            proc = subprocess.run(["gcore", "-o", str(prefix), str(pids[rank])],
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
            path = Path(f"{prefix}.{pids[rank]}")
            assert proc.returncode == 0 and path.exists(), proc.stderr.decode()[-2000:]
            return rank, path

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            ranks = dict(ex.map(one, range(world)))
        print(f"gcore of {world} ranks: {time.monotonic() - start:.0f} s", file=sys.stderr)
        job.kill()
    index.write_text(json.dumps({r: p.name for r, p in ranks.items()}))
    return ranks


# ---------------------------------------------------------------------------------------
# Checks: each tool must show the expected frames of rank 0 (main thread in all_reduce).

def check_hangscan_one(m: Measure) -> None:
    assert m.rc == 0, f"hangscan core exit {m.rc}: {m.err[-2000:]}"
    line = hs.hs_line("hang_gloo.py", "gloo-allreduce")
    need = [f"train_step ({hs.program_source('hang_gloo.py')}:{line})",   # Python, file:line
            "all_reduce (/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:",
            "c10d::Work::wait",                                              # native, no DWARF
            "pthread_cond_wait (./nptl/pthread_cond_wait.c:",                # native file:line
            "[inline]",                                                       # inline frames
            "_PyObject_MakeTpCall (../Objects/call.c:",                      # interpreter DWARF
            "gloo::transport::tcp::UnboundBuffer::waitRecv"]                  # a gloo thread
    missing = [n for n in need if n not in m.out]
    assert not missing, f"hangscan core output lacks {missing}:\n{m.out[:4000]}"


def check_eu_stack(m: Measure, source_lines: bool) -> None:
    assert m.rc == 0, f"eu-stack exit {m.rc}: {m.err[-2000:]}"
    need = ["c10d::Work::wait", "pthread_cond_wait", "gloo::transport::tcp::UnboundBuffer::waitRecv"]
    if source_lines:
        need.append("pthread_cond_wait.c:")
    missing = [n for n in need if n not in m.out]
    assert not missing, f"eu-stack output lacks {missing}:\n{m.out[:4000]}"


def check_gdb(m: Measure) -> None:
    assert m.rc == 0, f"gdb exit {m.rc}: {m.err[-2000:]}"
    need = ["c10d::Work::wait", "pthread_cond_wait", "in all_reduce", "in train_step"]
    missing = [n for n in need if n not in m.out]
    assert not missing, f"gdb output lacks {missing}:\n{m.out[:4000]}"


def check_hangscan_many(cores: list[Path], world: int) -> None:
    run = hs.run_hangscan(["core"] + [str(c) for c in cores] + ["--json"], timeout=900)
    assert run.rc == 0, run.describe()
    doc = run.doc
    ranks = sorted(p["rank"] for p in doc["processes"])
    assert ranks == list(range(world)), ranks
    groups = [(sorted(g["ranks"]), g["suspect"]) for g in doc["groups"]]
    assert groups == [([ODD], True), ([r for r in range(world) if r != ODD], False)], groups


# ---------------------------------------------------------------------------------------

def machine() -> str:
    cpu = next((l.split(":", 1)[1].strip() for l in (hs.read_text("/proc/cpuinfo") or "").splitlines()
                if l.startswith("model name")), "unknown cpu")
    return (f"{os.cpu_count()} x {cpu}, Linux {platform.release()}; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")


def load() -> str:
    return (hs.read_text("/proc/loadavg") or "?").split()[0]


def git_head() -> str:
    try:
        return subprocess.run(["git", "-C", str(hs.source_dir()), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(hs.build_dir()), help="build directory (hangscan)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--world", type=int, default=32, help="ranks of the job = cores in the many-core run")
    ap.add_argument("--cores-dir", help="keep the cores here and reuse them next time")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    os.environ["HS_BUILD_DIR"] = args.build
    os.environ.setdefault("HANGSCAN_BIN", str(Path(args.build) / "hangscan"))
    hangscan = hs.hangscan_bin()
    for tool in ("eu-stack", "gdb", "gcore"):
        if not shutil.which(tool):
            print(f"bench_core: {tool} is missing (apt-get install elfutils gdb)", file=sys.stderr)
            return 2
    if not os.path.exists(PYTHON) or subprocess.run([PYTHON, "-c", "import torch"],
                                                    capture_output=True).returncode != 0:
        print("bench_core: python3-torch is missing (tools/deps.sh test)", file=sys.stderr)
        return 2

    tmp = None
    if args.cores_dir:
        cores_dir = Path(args.cores_dir)
        cores_dir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="hs-bench-core-", dir="/var/tmp")
        cores_dir = Path(tmp)
    try:
        ranks = make_cores(args.world, cores_dir)
        one = ranks[0]
        many = [ranks[r] for r in sorted(ranks)]
        tools = [
            ("hangscan core (1 core)", [hangscan, "core", str(one)], check_hangscan_one),
            ("eu-stack --core", ["eu-stack", "--core", str(one), "--executable", EXE],
             lambda m: check_eu_stack(m, False)),
            ("eu-stack -i -s --core", ["eu-stack", "-i", "-s", "--core", str(one), "--executable", EXE],
             lambda m: check_eu_stack(m, True)),
            ("gdb bt + py-bt", ["gdb", "-nx", "-batch", "-ex", "thread apply all bt",
                                "-ex", "thread apply all py-bt", EXE, str(one)], check_gdb),
            (f"hangscan core ({len(many)} cores)", [hangscan, "core"] + [str(c) for c in many],
             lambda m: None),
        ]
        check_hangscan_many(many, args.world)
        for _, argv, check in tools:
            check(run_measured(argv))
        print("answers checked: every tool shows the expected frames; "
              f"{len(many)} cores group as [{ODD}] suspect, the rest together", file=sys.stderr)

        load_start = load()
        results: dict[str, list[Measure]] = {name: [] for name, _, _ in tools}
        for _ in range(args.runs):
            for name, argv, _ in tools:
                m = run_measured(argv)
                assert m.rc == 0, f"{name}: exit {m.rc}: {m.err[-1000:]}"
                results[name].append(m)
        load_end = load()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    size = one.stat().st_size if one.exists() else 0
    head = f"hangscan {git_head()}; {machine()}; load average {load_start} at start, {load_end} at end"
    print(head)
    print(f"core: gcore of rank 0 of a {args.world}-rank torch gloo job "
          f"({size / 2**20:.0f} MiB); {args.runs} runs each, medians\n")
    base = statistics.median(m.cpu for m in results[tools[0][0]])
    rows = []
    for name, _, _ in tools:
        ms = results[name]
        wall = statistics.median(m.wall for m in ms)
        cpu = statistics.median(m.cpu for m in ms)
        rss = statistics.median(m.rss_kb for m in ms) / 1024
        rows.append([name, f"{wall * 1000:.0f}", f"{min(m.wall for m in ms) * 1000:.0f}",
                     f"{cpu * 1000:.0f}", f"{min(m.cpu for m in ms) * 1000:.0f}",
                     f"{cpu / base:.2f}x", f"{rss:.0f}"])
    head_row = ["tool", "wall ms (median)", "wall ms (min)", "user+sys ms (median)",
                "user+sys ms (min)", "CPU vs hangscan 1 core", "peak RSS MiB"]
    if args.markdown:
        print("| " + " | ".join(head_row) + " |")
        print("|" + "---|" * len(head_row))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(r[i]) for r in rows + [head_row]) for i in range(len(head_row))]
        for r in [head_row] + rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    med = {name: (statistics.median(m.wall for m in results[name]),
                  statistics.median(m.cpu for m in results[name])) for name, _, _ in tools}
    hs1, eu, hsn = med[tools[0][0]], med["eu-stack --core"], med[tools[-1][0]]
    print()
    for what, i in (("wall", 0), ("user+sys", 1)):
        verdict = "met" if hs1[i] <= eu[i] else "MISSED"
        print(f"goal: hangscan core no slower than eu-stack --core ({what}): {verdict} "
              f"({hs1[i] * 1000:.0f} ms vs {eu[i] * 1000:.0f} ms)")
    for what, i in (("wall", 0), ("user+sys", 1)):
        ratio = hsn[i] / hs1[i] if hs1[i] else float("inf")
        verdict = "met" if ratio < 4 else "MISSED"
        print(f"goal: {len(many)} cores in < 4x one ({what}): {verdict} ({ratio:.2f}x: "
              f"{hsn[i] * 1000:.0f} ms vs {hs1[i] * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
