"""Benchmark of the quiet dump (issue #33 part 2): wall time of `dump` and the pause.

Usage: python3 bench_quiet.py NEW_HANGSCAN OLD_HANGSCAN PROGRAMS_DIR [RUNS=9]

tests/programs/quiet_threads with 50 and 200 blocked threads (all asleep), and with 200 blocked
plus one spinning thread. Each binary dumps each target RUNS times, alternating (new, old), with
--json; prints the median and range of the wall time and the median pause_us, one row a case.
Run as root (the quiet path needs BPF), under flock /tmp/hs-bpf.lock.
"""
import json
import os
import statistics
import subprocess
import sys
import time


def start(programs, n, extra):
    r, w = os.pipe()
    p = subprocess.Popen([os.path.join(programs, "quiet_threads"), str(w), str(n), extra],
                         pass_fds=(w,), start_new_session=True)
    os.close(w)
    if os.read(r, 16) != b"ready\n":
        raise RuntimeError("target did not get ready")
    os.close(r)
    return p


def one(binary, pid):
    t0 = time.monotonic()
    out = subprocess.run([binary, "dump", "--pid", str(pid), "--json"], capture_output=True,
                         text=True, timeout=120)
    wall = (time.monotonic() - t0) * 1000
    proc = json.loads(out.stdout)["processes"][0]
    return wall, proc["pause_us"]


def main():
    new, old, programs = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 9
    for n, extra in ((50, "none"), (200, "none"), (200, "spin")):
        p = start(programs, n, extra)
        try:
            time.sleep(0.5)
            res = {"new": [], "old": []}
            for _ in range(runs):
                for name, binary in (("new", new), ("old", old)):
                    res[name].append(one(binary, p.pid))
            row = [f"{n} blocked" + (" + 1 spinning" if extra == "spin" else "")]
            for name in ("new", "old"):
                walls = [w for w, _ in res[name]]
                pauses = [u for _, u in res[name]]
                row.append(f"{statistics.median(walls):.1f} ms ({min(walls):.1f}-{max(walls):.1f}),"
                           f" pause {statistics.median(pauses):.0f} us"
                           f" ({min(pauses)}-{max(pauses)})")
            print(" | ".join(row), flush=True)
        finally:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
