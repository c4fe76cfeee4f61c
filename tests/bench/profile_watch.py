#!/usr/bin/env python3
"""Where the recorder's cost goes: the bench job of bench_watch.py under one `hangscan watch`.

Why: bench_watch.py says how much the recorder costs; this says where. It starts the same
8-rank torch gloo job, runs `hangscan watch --pid RANK... --for SECONDS` at the default rate
(extra arguments are passed on), and prints for the steady state (from watch's 'recording'
line, less the last 2 s): each BPF program's run count and run time (`bpftool prog show`,
kernel.bpf_stats_enabled=1 for the run, restored after), hangscan's own CPU time, the job's
CPU time, and the watched ranks' system calls per second (the kernel's counters in the
`watched` map). With PERF=1 it also runs `perf record --call-graph dwarf` on hangscan
(/tmp/hs-profile-watch.data) for the user-space split. WARM=S measures from S seconds in
(past the one-time work: each module's DWARF inflated and its symbols indexed at first use). The wait-stack iterator
(copy_wait_stacks) runs in hangscan's context: listed, but its time counts in hangscan's CPU.

usage: HANGSCAN_BIN=build/hangscan /usr/bin/python3 tests/bench/profile_watch.py [SECONDS [ARGS...]]
Every process it starts is stopped at the end (by pid).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_watch as bw  # noqa: E402


def fd_ids(pid, key):
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            m = re.search(rf"^{key}:\s+(\d+)", open(f"/proc/{pid}/fdinfo/{fd}").read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def progs(pid):
    ids = fd_ids(pid, "prog_id")
    out = json.loads(subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                                    text=True).stdout or "[]")
    return {p["name"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in out if p["id"] in ids}


def thread_cpu(pid):
    """Each thread's CPU seconds so far, by thread name and tid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            st = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        name = st.split("(", 1)[1].rsplit(")", 1)[0]
        f = st.rsplit(")", 1)[1].split()
        out[f"{name}/{tid}"] = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    return out


def minor_faults(pid):
    """The process's minor page faults so far (/proc/PID/stat field 10)."""
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[7])


def map_dump(pid, name):
    """The entries of the process's BPF map `name` (bpftool's JSON), None when it has none."""
    for i in fd_ids(pid, "map_id"):
        info = json.loads(subprocess.run(["bpftool", "map", "show", "id", str(i), "--json"],
                                         capture_output=True, text=True).stdout or "{}")
        if info.get("name") == name:
            return json.loads(subprocess.run(["bpftool", "map", "dump", "id", str(i), "--json"],
                                             capture_output=True, text=True).stdout or "[]")
    return None


def counters(pid):
    """The recorder's global counters so far (per-CPU values summed), by index (watch_events.h)."""
    dump = map_dump(pid, "counters") or []
    return {e["key"]: sum(v["value"] for v in e["values"]) for e in (d.get("formatted", d) for d in dump)}


COUNTER_NAMES = {0: "records", 1: "lost", 2: "stack faults", 3: "stale wait copies", 4: "wait copies (iterator)", 5: "wait copies (own)", 6: "own copies voided"}


def watched_syscalls(pid):
    """The watched ranks' completed system calls so far (None when this recorder keeps no count)."""
    dump = map_dump(pid, "watched")
    vals = [e["formatted"]["value"] for e in dump or [] if "formatted" in e]
    if not vals or "syscalls_done" not in vals[0]:
        return None
    return sum(v["syscalls_done"] for v in vals)


def main():
    secs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    extra = sys.argv[2:]
    hs = os.environ.get("HANGSCAN_BIN", "build/hangscan")
    with bw.stepping_job(8, "hs-profile-steps-") as (job, counter, ranks):
        watch = perf = None
        try:
            argv = [hs, "watch"] + sum((["--pid", str(p)] for p in ranks), []) + ["--for", str(secs), "--json"]
            watch = subprocess.Popen(argv + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            line = watch.stderr.readline().decode()
            assert line.startswith("hangscan: recording"), line
            warm = int(os.environ.get("WARM", "0"))
            time.sleep(warm)  # past the one-time work (DWARF inflated, symbols indexed)
            if os.environ.get("PERF"):
                perf = subprocess.Popen(["perf", "record", "--call-graph", os.environ.get("PERF_CG", "dwarf,16384"), "-F", os.environ.get("PERF_FREQ", "499"), "-o",
                                         "/tmp/hs-profile-watch.data", "-p", str(watch.pid)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            sc0, k0, f0 = watched_syscalls(watch.pid), counters(watch.pid), minor_faults(watch.pid)
            th0 = thread_cpu(watch.pid)
            s0, c0, h0, b0, t0 = (bw.steps(counter), bw.cpu_s(ranks), bw.proc_cpu_s(watch.pid), progs(watch.pid),
                                  time.monotonic())
            time.sleep(secs - 2 - warm)
            s1, c1, h1, b1, t1 = (bw.steps(counter), bw.cpu_s(ranks), bw.proc_cpu_s(watch.pid), progs(watch.pid),
                                  time.monotonic())
            sc1, k1, f1 = watched_syscalls(watch.pid), counters(watch.pid), minor_faults(watch.pid)
            th1 = thread_cpu(watch.pid)
            if perf:
                perf.send_signal(signal.SIGINT)
                perf.wait()
            out, _ = watch.communicate(timeout=120)
            doc = json.loads(out)
            wall = t1 - t0
            print(f"steady state {wall:.2f} s: job {(s1 - s0) / wall:.2f} steps/s, job CPU {c1 - c0:.2f} s, "
                  f"hangscan CPU {h1 - h0:.2f} s; window: {doc['events']} records, {doc['lost']} lost; "
                  f"load {' '.join(open('/proc/loadavg').read().split()[:3])}")
            print("  recorder counters: " + ", ".join(
                f"{COUNTER_NAMES.get(k, k)} {(k1[k] - k0.get(k, 0)) / wall:.1f}/s" for k in sorted(k1))
                + f"; hangscan's minor page faults {(f1 - f0) / wall:.0f}/s")
            print("  hangscan's threads: " + ", ".join(
                f"{k} {th1[k] - th0.get(k, 0):.2f} s" for k in sorted(th1)))
            if sc0 is not None and sc1 is not None:
                print(f"watched ranks' system calls: {(sc1 - sc0) / wall:.0f}/s")
            total = 0
            for name in sorted(b1):
                dn = b1[name][0] - b0.get(name, (0, 0))[0]
                dc = b1[name][1] - b0.get(name, (0, 0))[1]
                # The sleepable iterator runs in hangscan's context: its time is in hangscan's CPU.
                ours = name == bw.ITERATOR
                total += 0 if ours else dn
                print(f"  {name:16s} {dc / wall:9.0f} runs/s {dn / 1e9:7.3f} s {dn / max(dc, 1):7.0f} ns/run"
                      f"{' (in hangscan CPU)' if ours else ''}")
            print(f"BPF {total / 1e9:.3f} s + hangscan {h1 - h0:.3f} s = "
                  f"{100 * ((h1 - h0) + total / 1e9) / (c1 - c0):.2f}% of the job's CPU")
        finally:
            for p in (perf, watch):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()


if __name__ == "__main__":
    main()
