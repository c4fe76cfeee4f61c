"""hangscan as root in a privileged podman container with its own pid namespace (BPF allowed).

BPF knows processes by their host pids, hangscan inside the container by the container's: the
eBPF recorder would watch the host's process of that number, and the quiet dump's snapshot (a
task iterator whose program compares host tgids) would find no thread. hangscan turns BPF off
in a pid namespace that is not the host's:
- `watch --pid N` (N as the container sees it) samples with ptrace, says why on stderr and in
  the report's diagnostics, and its samples are the burner's, with its exact Python frames;
- `dump --pid 1` stops the process with ptrace and gives its exact Python frames;
- `doctor` says why the eBPF recorder and the quiet dump are off.
On the code before (seen): watch recorded the host's pid of that number (its waits and the
SIGCHLDs of host processes, named as the container's process) and dump gave no thread.

Needs podman, runc, mmdebstrap and root (as test_containers.py, whose image and helpers it
uses); skipped with the reason otherwise. Run under `flock /tmp/hs-bpf.lock`. The container
and the image are removed at the end.
"""

import json
import re
import shutil
import uuid
from pathlib import Path

import pytest

import hs_testlib as lib
import test_containers as tc

WHY = ("hangscan runs in a pid namespace of its own (a container's) and BPF knows processes by "
       "their host pids: BPF is off")
HINT = ("for the eBPF recorder and the quiet dump run hangscan in the host's pid namespace: on "
        "the host, or in a container started with --pid=host (docker, podman; Kubernetes: "
        "hostPID: true); meanwhile watch samples with ptrace and dump stops threads with ptrace")
BURN_LINES = {lib.hs_line("watch_ranks.py", t) for t in ("burn_while", "burn_for", "burn_add")}


@pytest.fixture(scope="module")
def container():
    """A privileged container (own pid namespace): pid 1 is py_container.py asleep, and a
    Python burner its child. Yields (Podman, name, hangscan's path inside, burner's pid
    inside)."""
    pm, workdir, tarball = tc.podman_session("hs-pidns-")
    try:
        tc.probe_podman(pm, tarball)
        name = "hs-pidns-" + uuid.uuid4().hex[:6]
        ready, burn = tc.make_fifo(workdir, "ready"), tc.make_fifo(workdir, "burn-ready")
        build = lib.build_dir()
        script = ("python3 /hs-programs/watch_ranks.py 3 burn 3>/hs-run/burn-ready & "
                  "exec python3 /hs-programs/py_container.py /hs-run/ready")
        host_pid, _ = pm.start(name, "--privileged", "-v", f"{build}:/hs-build:ro", fifo=ready,
                               cmd=["sh", "-c", script])
        tc.wait_ready(burn, 30.0)
        kids = Path(f"/proc/{host_pid}/task/{host_pid}/children").read_text().split()
        assert len(kids) == 1, kids
        nspid = re.search(r"^NSpid:\s*(.*)$", Path(f"/proc/{kids[0]}/status").read_text(), re.M)
        ids = [int(x) for x in nspid.group(1).split()]
        assert ids[0] == int(kids[0]) and len(ids) == 2, ids  # host pid, container pid
        yield pm, name, "/hs-build/" + Path(lib.hangscan_bin()).name, ids[1]
    finally:
        pm.close()
        shutil.rmtree(workdir, ignore_errors=True)


def inside(pm, name, *argv, timeout=90):
    return pm("exec", name, *argv, check=False, timeout=timeout)


def test_watch_in_a_pid_namespace_samples_the_right_process(container):
    pm, name, hs, burner = container
    out = inside(pm, name, hs, "watch", "--pid", str(burner), "--for", "3", "--json")
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    doc = json.loads(out.stdout)
    assert [p["pid"] for p in doc["processes"]] == [burner], out.stdout[:2000]
    proc = doc["processes"][0]
    assert proc["samples"] >= 3, out.stdout[:3000]  # 2 Hz for 3 s, on a shared machine
    assert proc["top_stacks"], out.stdout[:3000]
    for stack in proc["top_stacks"]:
        python = [(f["function"], f["line"]) for f in stack["frames"] if f["kind"] == "python"]
        assert [f for f, _ in python] == ["burn_cpu", "main", "<module>"], stack
        assert python[0][1] in BURN_LINES, stack
    assert doc["timeline"] == [], doc["timeline"]  # no host process's signals
    why = (f"{WHY}; falling back to ptrace samples at 2 Hz (each stops the process 1-5 ms: "
           "0.2-1% of its time, counted in the report; no waits, signals or exits)")
    assert lines[:2] == ["hangscan: " + why, "hint: " + HINT], out.stderr
    assert doc["recorder"] == "ptrace", out.stdout[:2000]
    assert [(d["message"], d["hint"]) for d in doc["diagnostics"]] == [(why, HINT)], doc["diagnostics"]


def test_dump_in_a_pid_namespace_gives_exact_frames(container):
    pm, name, hs, _ = container
    out = inside(pm, name, hs, "dump", "--pid", "1", "--json", "-v")
    assert out.returncode == 0, out.stderr
    assert "0 threads copied asleep (bpf)" not in out.stderr, out.stderr
    doc = json.loads(out.stdout)
    proc = lib.process_of(doc, 1)
    assert [t["tid"] for t in proc["threads"]] == [1], out.stdout[:3000]
    assert tc.python_triples(proc) == tc.EXPECTED, out.stdout[:3000]


def test_doctor_in_a_pid_namespace_says_why_bpf_is_off(container):
    pm, name, hs, _ = container
    out = inside(pm, name, hs, "doctor")
    lines = out.stdout.splitlines()
    assert [line for line in lines if line.startswith(("WARN ebpf:", "ok   ebpf:"))] == [
        f"WARN ebpf: {WHY} fix: {HINT}"], out.stdout
    assert [line for line in lines if "quiet-dump:" in line] == [
        f"WARN quiet-dump: dump stops every thread with ptrace: {WHY}"], out.stdout
