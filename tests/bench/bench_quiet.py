"""Benchmark of the quiet dump (issue #33 part 2): wall time of `dump` and the pause.

Usage: python3 bench_quiet.py PROGRAMS_DIR RUNS [--only=TEXT] LABEL=HANGSCAN[:nobpf] ...

tests/programs/quiet_threads with 50 and 200 blocked threads (all asleep), and with 200 blocked
plus one spinning thread; tests/programs/py_quiet.py under Debian's python3.11 with 50 and 200
blocked Python threads (their frames walked in BPF). --only=TEXT keeps the cases whose name holds TEXT. Each binary dumps each target RUNS times, alternating (in the order
given), with --json; ":nobpf" runs that binary with HANGSCAN_NO_BPF=1 (the ptrace-only dump).
Prints the median and range of the wall time and of pause_us, one row a case, one column a
binary, then the 1-minute load average.
Run as root (the quiet path needs BPF), under flock /tmp/hs-bpf.lock.
"""
import json
import os
import statistics
import subprocess
import sys
import time


PY_QUIET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs",
                        "py_quiet.py")


def start(programs, n, extra):
    r, w = os.pipe()
    if extra == "python":
        argv = ["/usr/bin/python3.11", PY_QUIET, str(w), str(n), os.devnull]
    else:
        argv = [os.path.join(programs, "quiet_threads"), str(w), str(n), extra]
    p = subprocess.Popen(argv, pass_fds=(w,), start_new_session=True, stdout=subprocess.DEVNULL)
    os.close(w)
    if os.read(r, 16) != b"ready\n":
        raise RuntimeError("target did not get ready")
    os.close(r)
    return p


def one(spec, pid):
    binary, _, mode = spec.partition(":")
    env = dict(os.environ, HANGSCAN_NO_BPF="1" if mode == "nobpf" else "0")
    t0 = time.monotonic()
    out = subprocess.run([binary, "dump", "--pid", str(pid), "--json"], capture_output=True,
                         text=True, timeout=120, env=env)
    wall = (time.monotonic() - t0) * 1000
    proc = json.loads(out.stdout)["processes"][0]
    return wall, proc["pause_us"]


def main():
    programs, runs = sys.argv[1], int(sys.argv[2])
    only = [a.split("=", 1)[1] for a in sys.argv[3:] if a.startswith("--only=")]
    binaries = dict(a.split("=", 1) for a in sys.argv[3:] if not a.startswith("--only="))
    print("case | " + " | ".join(binaries), flush=True)
    names = {"none": "{} blocked", "spin": "{} blocked + 1 spinning",
             "python": "python3.11, {} blocked Python threads"}
    for n, extra in ((50, "none"), (200, "none"), (200, "spin"), (50, "python"),
                     (200, "python")):
        case = names[extra].format(n)
        if only and not any(o in case for o in only):
            continue
        p = start(programs, n, extra)
        try:
            time.sleep(0.5)
            res = {name: [] for name in binaries}
            for _ in range(runs):
                for name, spec in binaries.items():
                    res[name].append(one(spec, p.pid))
            row = [case]
            for name in binaries:
                walls = [w for w, _ in res[name]]
                pauses = [u for _, u in res[name]]
                row.append(f"{statistics.median(walls):.1f} ms ({min(walls):.1f}-{max(walls):.1f}),"
                           f" pause {statistics.median(pauses):.0f} us"
                           f" ({min(pauses)}-{max(pauses)})")
            print(" | ".join(row), flush=True)
        finally:
            p.kill()
            p.wait()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
