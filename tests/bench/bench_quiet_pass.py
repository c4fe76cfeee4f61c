"""The BPF snapshot's copying pass alone (issue #33, the tid map): how long the iterator runs.

Usage: python3 bench_quiet_pass.py N RUNS HANGSCAN...

tests/programs/py_quiet.py under Debian's python3.11 with N blocked Python threads; each binary
dumps it RUNS times, alternating, under `strace -T -e trace=bpf,read`. The pass runs inside the
reads of the iterator's fd (the fd BPF_ITER_CREATE returned): their summed times for the first
(copying) pass, median and range per binary. strace adds its own cost to each read; compare
binaries, not absolutes. Run as root, under flock /tmp/hs-bpf.lock.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

PY_QUIET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs",
                        "py_quiet.py")


def copying_pass_ms(binary, pid):
    with tempfile.NamedTemporaryFile(mode="r") as trace:
        subprocess.run(["strace", "-f", "-qq", "-T", "-e", "trace=bpf,read", "-o", trace.name,
                        binary, "dump", "--pid", str(pid), "--json"], capture_output=True,
                       timeout=120, check=True)
        passes, fds = [], set()
        for line in trace.read().splitlines():
            m = re.search(r"BPF_ITER_CREATE.*= (\d+) <", line)
            if m:
                fds.add(m.group(1))
                passes.append(0.0)
                continue
            m = re.search(r"read\((\d+), .*<([0-9.]+)>", line)
            if m and m.group(1) in fds and passes:
                passes[-1] += float(m.group(2)) * 1000
    return passes[0]


def main():
    n, runs, binaries = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    r, w = os.pipe()
    p = subprocess.Popen(["/usr/bin/python3.11", PY_QUIET, str(w), str(n), os.devnull],
                         pass_fds=(w,), start_new_session=True, stdout=subprocess.DEVNULL)
    os.close(w)
    try:
        if os.read(r, 16) != b"ready\n":
            raise RuntimeError("target did not get ready")
        time.sleep(0.5)
        res = {b: [] for b in binaries}
        for _ in range(runs):
            for b in binaries:
                res[b].append(copying_pass_ms(b, p.pid))
    finally:
        os.close(r)
        p.kill()
        p.wait()
    for b, v in res.items():
        print(f"{b}: copying pass {statistics.median(v):.2f} ms ({min(v):.2f}-{max(v):.2f}), "
              f"{len(v)} runs", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
