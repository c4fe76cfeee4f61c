#!/usr/bin/env python3
"""Benchmark: `hangscan dump` against eu-stack and gdb on the same live targets.

For each scenario (a target program started once, told ready through a pipe) every tool is
run --runs times, alternating tools so that drift affects them alike; the table gives the
median/min/max wall time, the ratio to hangscan's median, and hangscan's own median
`pause_us` (from --json). Goals (issue "Foundation"): median pause <= 2 ms at 50 threads and
<= 10 ms at 200; hangscan's whole dump no slower than `eu-stack -p`.

Python scenarios (issue "Python frames"): tests/programs/py_threads.py under Debian's
python3.11 (python3.11-dbg installed, so gdb's py-bt works): the --native pause at 50 threads
(goal <= 2 ms) and a Python-only dump of 20 threads against gdb's `thread apply all py-bt`
(goal: at most 1/20 of gdb's time).

Issue 32's 8-rank benchmark (opt-in: `--only "8 ranks"`; it starts 8 torch processes, which
takes a minute on 2 CPUs): tests/programs/hang_gloo.py, a torch.distributed gloo job of 8 ranks
spawned by torch.multiprocessing where rank 3 skips an all_reduce, and one `hangscan dump --pid R
...` of all 8 ranks (Python frames). With --baseline, every hangscan tool gets a goal line: at most
5% slower than the baseline, by medians and by the median of the paired (same round) ratios.
Each run records the 1-minute load average before it (other builds share the CPUs).

Extending: add a Scenario to SCENARIOS (e.g. a Python target) and/or a Tool to its tools
(e.g. gdb with `py-bt`). A tool's `ok` checks its output so a failing tool is reported, not
timed as if it had worked.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import hs_testlib as hs  # noqa: E402


@dataclasses.dataclass
class Tool:
    name: str
    argv: Callable[[int], list[str]]          # pid -> command line
    ok: Callable[[subprocess.CompletedProcess], bool]
    pause_us: Optional[Callable[[str, int], int]] = None  # (stdout, pid) -> pause


@dataclasses.dataclass
class Scenario:
    name: str
    argv: list[str]                           # target command line (ready fd inserted at 1)
    tools: list[Tool]
    pause_goal_us: Optional[int] = None
    all_asleep: bool = False                  # wait until every thread sleeps in the kernel
    gdb_ratio_goal: Optional[float] = None    # hangscan's median <= this x gdb's
    start_timeout: float = 30.0               # seconds until the target says ready
    opt_in: bool = False                      # runs only when --only names it


@dataclasses.dataclass
class Result:
    tool: Tool
    seconds: list[float] = dataclasses.field(default_factory=list)
    pauses: list[int] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)
    loads: list[float] = dataclasses.field(default_factory=list)  # 1-min load before each run
    cpu: list[float] = dataclasses.field(default_factory=list)  # user + system seconds per run


def hangscan_pause(stdout: str, pid: int) -> int:
    return hs.process_of(json.loads(stdout), pid)["pause_us"]


def hangscan_bins() -> list[tuple[str, str]]:
    """(label suffix, binary): this build's hangscan, and with --baseline an older binary run
    side by side in the same alternation, so a before/after comparison shares the load."""
    bins = [("", hs.hangscan_bin())]
    if os.environ.get("HS_BENCH_BASELINE"):
        bins.append((" (baseline)", os.environ["HS_BENCH_BASELINE"]))
    return bins


def default_tools() -> list[Tool]:
    return [
        *[Tool(f"hangscan dump{label}",
               lambda pid, b=binary: [b, "dump", "--pid", str(pid), "--json"],
               lambda p: p.returncode == 0 and '"threads"' in p.stdout, hangscan_pause)
          for label, binary in hangscan_bins()],
        Tool("eu-stack -p", lambda pid: ["eu-stack", "-p", str(pid)],
             lambda p: p.returncode == 0 and "TID" in p.stdout),
        Tool("eu-stack -p -i -s", lambda pid: ["eu-stack", "-i", "-s", "-p", str(pid)],
             lambda p: p.returncode == 0 and "TID" in p.stdout),
        Tool("gdb thread apply all bt",
             lambda pid: ["gdb", "-nx", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
             lambda p: p.returncode == 0 and "Thread " in p.stdout),
    ]


PYTHON = "/usr/bin/python3.11"


def python_tools(native: bool) -> list[Tool]:
    """Issue "Python frames": hangscan (Python-only, and --native) against gdb's py-bt, which
    needs python3.11-dbg for the same interpreter."""
    hs_argv = lambda b, *extra: (lambda pid: [b, "dump", "--pid", str(pid), "--json", *extra])
    ok = lambda p: p.returncode == 0 and '"kind": "python"' in p.stdout
    tools = []
    for label, binary in hangscan_bins():
        if native:
            tools.append(Tool(f"hangscan dump --native{label}", hs_argv(binary, "--native"), ok,
                              hangscan_pause))
        tools.append(Tool(f"hangscan dump (Python){label}", hs_argv(binary), ok, hangscan_pause))
    tools.append(Tool("gdb thread apply all py-bt",
                      lambda pid: ["gdb", "-nx", "-p", str(pid), "-batch", "-ex",
                                   "thread apply all py-bt"],
                      lambda p: p.returncode == 0 and "File " in p.stdout))
    return tools


def py_threads(n: int) -> list[str]:
    return [PYTHON, str(hs.program_source("py_threads.py")), hs.READY, str(n)]


TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch
WORLD = 8


def rank_pids(launcher: int) -> list[int]:
    """torch.multiprocessing.spawn's ranks (its resource tracker runs no spawn_main)."""
    ranks = [p for p in hs.children(launcher) if any("spawn_main" in a for a in hs.cmdline(p))]
    assert len(ranks) == WORLD, f"{len(ranks)} ranks under {launcher}"
    return ranks


def ranks_pause(stdout: str, launcher: int) -> int:
    """The longest pause any rank saw (each process is stopped on its own; 0 when the quiet
    path stopped none)."""
    return max((p.get("pause_us") or 0 for p in json.loads(stdout)["processes"]), default=0)


def rank_tools() -> list[Tool]:
    """One `dump` of every rank of the gloo job, each rank named with --pid."""
    def argv(binary: str) -> Callable[[int], list[str]]:
        return lambda pid: [binary, "dump", *[a for r in rank_pids(pid) for a in ("--pid", str(r))],
                            "--json"]
    ok = lambda p: (p.returncode == 0 and '"kind": "python"' in p.stdout
                    and len(json.loads(p.stdout)["processes"]) == WORLD)
    return [Tool(f"hangscan dump {WORLD} ranks{label}", argv(binary), ok, ranks_pause)
            for label, binary in hangscan_bins()]


def gloo_job() -> list[str]:
    return [TORCH_PYTHON, str(hs.program_source("hang_gloo.py")), hs.READY, "--launcher", "spawn",
            "--world", str(WORLD), "--odd", "3"]


def default_scenarios() -> list[Scenario]:
    return [
        Scenario("50 threads", [hs.program("many_threads"), "50"], default_tools(), 2000),
        Scenario("200 threads", [hs.program("many_threads"), "200"], default_tools(), 10000),
        Scenario("python3.11 50 threads --native", py_threads(50), python_tools(True), 2000,
                 all_asleep=True),
        Scenario("python3.11 20 threads", py_threads(20), python_tools(False), None,
                 all_asleep=True, gdb_ratio_goal=1 / 20),
        Scenario(f"{WORLD} ranks torch gloo", gloo_job(), rank_tools(), start_timeout=400,
                 opt_in=True),
    ]


def run_scenario(scenario: Scenario, runs: int, pool: hs.TargetPool) -> list[Result]:
    """The target gets a TMPDIR of its own: what a killed target leaves there (the gloo job's
    store) goes with it."""
    with tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp:
        target = pool.start(scenario.argv, timeout=scenario.start_timeout,
                            env=dict(os.environ, TMPDIR=tmp))
        try:
            return time_tools(scenario, target, runs)
        finally:
            target.kill()


def time_tools(scenario: Scenario, target: hs.Target, runs: int) -> list[Result]:
    if scenario.all_asleep:
        hs.wait_for(lambda: set(hs.thread_states(target.pid).values()) == {"S"}, 30,
                    "every thread asleep in the kernel")
    results = [Result(tool) for tool in scenario.tools]
    env = dict(os.environ, DEBUGINFOD_URLS="")  # no network lookups for anyone
    for _ in range(runs):
        for res in results:
            argv = res.tool.argv(target.pid)
            res.loads.append(load_average())
            cpu_before, start = children_cpu(), time.monotonic()
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600,
                                  stdin=subprocess.DEVNULL)
            elapsed = time.monotonic() - start
            res.cpu.append(children_cpu() - cpu_before)
            if not res.tool.ok(proc):
                res.failures.append(f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
                continue
            res.seconds.append(elapsed)
            if res.tool.pause_us:
                res.pauses.append(res.tool.pause_us(proc.stdout, target.pid))
            hs.assert_runs_on(target.pid)
    return results


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def report(scenario: Scenario, results: list[Result], markdown: bool) -> list[str]:
    base = statistics.median(results[0].seconds) if results[0].seconds else None
    rows = []
    for res in results:
        if not res.seconds:
            rows.append([res.tool.name, "failed", "", "", "", res.failures[0] if res.failures else ""])
            continue
        med = statistics.median(res.seconds)
        ratio = f"{med / base:.2f}x" if base else "n/a"
        note = f"{len(res.failures)} failed runs" if res.failures else ""
        if res.pauses:
            note = (f"median pause_us {int(statistics.median(res.pauses))} "
                    f"(min {min(res.pauses)}, max {max(res.pauses)})" + (f"; {note}" if note else ""))
        note += (f"; cpu {fmt_ms(statistics.median(res.cpu))} ms"
                 f"; load {min(res.loads):.1f}-{max(res.loads):.1f}")
        rows.append([res.tool.name, fmt_ms(med), fmt_ms(min(res.seconds)), fmt_ms(max(res.seconds)),
                     ratio, note])
    head = ["tool", "median ms", "min ms", "max ms", "vs hangscan", "notes"]
    lines = [f"### {scenario.name} ({len(results[0].seconds)} runs each)", ""]
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
        for r in [head] + rows:
            lines.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append("")
    lines += goals(scenario, results)
    lines.append("")
    return lines


def children_cpu() -> float:
    """CPU seconds of finished children: what a tool costs, less bent by others' load."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_average() -> float:
    return float((hs.read_text("/proc/loadavg") or "0").split()[0])


def baseline_goals(results: list[Result], limit: float = 0.05) -> list[str]:
    """Issue 32: each hangscan tool at most `limit` slower than the same tool of --baseline.
    The paired ratio compares the two runs of one round (same load), then takes the median."""
    out = []
    for res in results:
        base = next((r for r in results if r.tool.name == res.tool.name + " (baseline)"), None)
        if not (base and res.seconds and len(base.seconds) == len(res.seconds)):
            continue
        change = statistics.median(res.seconds) / statistics.median(base.seconds) - 1
        paired = statistics.median(a / b for a, b in zip(res.seconds, base.seconds)) - 1
        cpu = statistics.median(res.cpu) / statistics.median(base.cpu) - 1
        verdict = "met" if max(change, paired) <= limit else "MISSED"
        out.append(f"goal: {res.tool.name} at most {limit:.0%} slower than the baseline: {verdict} "
                   f"(medians {change:+.1%}, paired median {paired:+.1%}; cpu medians {cpu:+.1%})")
    return out


def goals(scenario: Scenario, results: list[Result]) -> list[str]:
    out = baseline_goals(results)
    hs_res = results[0]
    if hs_res.pauses and scenario.pause_goal_us:
        med = statistics.median(hs_res.pauses)
        verdict = "met" if med <= scenario.pause_goal_us else "MISSED"
        out.append(f"goal: median pause <= {scenario.pause_goal_us} us: {verdict} ({int(med)} us)")
    gdb = next((r for r in results if r.tool.name.startswith("gdb")), None)
    if scenario.gdb_ratio_goal and hs_res.seconds and gdb and gdb.seconds:
        a, b = statistics.median(hs_res.seconds), statistics.median(gdb.seconds)
        verdict = "met" if a <= b * scenario.gdb_ratio_goal else "MISSED"
        out.append(f"goal: hangscan at most {scenario.gdb_ratio_goal:.2f}x gdb's time: {verdict} "
                   f"({fmt_ms(a)} ms vs {fmt_ms(b)} ms: {a / b:.3f}x)")
    eu = next((r for r in results if r.tool.name == "eu-stack -p"), None)
    if hs_res.seconds and eu and eu.seconds:
        a, b = statistics.median(hs_res.seconds), statistics.median(eu.seconds)
        verdict = "met" if a <= b else "MISSED"
        out.append(f"goal: hangscan dump no slower than eu-stack -p: {verdict} "
                   f"({fmt_ms(a)} ms vs {fmt_ms(b)} ms)")
    return out


def machine() -> str:
    cpu = "unknown cpu"
    for line in (hs.read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = next((int(l.split()[1]) for l in (hs.read_text("/proc/meminfo") or "").splitlines()
                   if l.startswith("MemTotal")), 0)
    load = (hs.read_text("/proc/loadavg") or "?").split()[0]
    return (f"{platform.node()}: {os.cpu_count()} x {cpu}, {mem_kb // 1024} MiB, "
            f"Linux {platform.release()}, load average {load} at start; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build directory (hangscan, programs/)")
    ap.add_argument("--runs", type=int, default=7, help="runs per tool and scenario (>= 5)")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--only", action="append", default=[],
                    help="run only scenarios whose name contains this (repeatable)")
    ap.add_argument("--exact", action="store_true",
                    help="--only names whole scenario names (\"50 threads\" without the Python one)")
    ap.add_argument("--baseline", help="another hangscan binary to time side by side (before/after)")
    ap.add_argument("--hangscan-only", action="store_true",
                    help="time only hangscan (and --baseline): a before/after run without the others")
    args = ap.parse_args()
    if args.baseline:
        os.environ["HS_BENCH_BASELINE"] = str(Path(args.baseline).resolve())
    os.environ["HS_BUILD_DIR"] = args.build
    os.environ.setdefault("HANGSCAN_BIN", str(Path(args.build) / "hangscan"))
    missing = [t for t in ("eu-stack", "gdb") if not shutil.which(t)]
    if missing:
        print(f"bench: missing {', '.join(missing)} (apt-get install elfutils gdb)", file=sys.stderr)
        return 2
    print(f"machine: {machine()}\n")
    failed = False
    with hs.TargetPool() as pool:
        for scenario in default_scenarios():
            named = any(o == scenario.name if args.exact else o in scenario.name
                        for o in args.only)
            if (args.only or scenario.opt_in) and not named:
                continue
            if args.hangscan_only:
                scenario.tools = [t for t in scenario.tools if t.name.startswith("hangscan")]
            results = run_scenario(scenario, max(args.runs, 1), pool)
            print("\n".join(report(scenario, results, args.markdown)), flush=True)
            failed |= any(r.failures for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
