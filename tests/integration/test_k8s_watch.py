"""`hangscan watch --k8s SELECTOR`: the node-local watch in every pod of a job, merged.

kubectl is the stand-in tests/k8s/kubectl (as in test_k8s.py: `get pods -o json -l SELECTOR`
from a PodList the test writes, `exec` through `podman exec`). Two "pods" are podman
containers: train-0 runs ranks 0 and 1, train-1 runs rank 2, of
tests/programs/py_k8s_watch_rank.py; ranks 0 and 2 compute in step(), rank 1 sleeps in
load_checkpoint() since before the window. In each pod `hangscan watch --node-local` samples
with ptrace (the pods have pid namespaces of their own); the merged verdict must name rank 1
exactly and show the other ranks' Python frames at their lines. A third pod of another
selector is Running but has no container "trainer": its exec fails with kubectl's message,
a partial result (exit 1) with that reason. --html writes the page of the merged window.
Also: SIGINT ends every pod's window, --stall fires across the pods (a fourth pod whose one rank
sleeps), and --debug-image runs the watches in ephemeral containers (the stand-in's `debug`).

Needs podman, runc and mmdebstrap and root, like test_k8s.py; skipped with the reason
otherwise. Every container and the image are removed at the end; no BPF is loaded.
"""

import json
import re
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

import hs_testlib as lib
import test_containers as tc
from test_k8s import STANDIN, pod_item
from test_watch_formats import page_document

PROGRAM = "py_k8s_watch_rank.py"
MARKS = {tag: lib.hs_line(PROGRAM, tag) for tag in ("step", "train", "module", "train_odd",
                                                      "load_checkpoint")}
ODD = 1


def start_rank(pm, workdir, container, rank, run=True, opts=(), host=False):
    """Rank `rank` in `container` (a new container when `run`, with `opts`, else one more
    process in it); its pid in the container (its host pid when `host`)."""
    fifo = tc.make_fifo(workdir, f"ready-{container}-{rank}")
    cmd = ["python3", f"/hs-programs/{PROGRAM}", f"/hs-run/{fifo.name}"]
    env = ["-e", f"RANK={rank}", "-e", f"ODD_RANK={ODD}"]
    if run:
        pm.containers.append(container)
        pm("run", "-d", "--runtime", "runc", "--name", container, *env,
           "-v", f"{lib.program_source(PROGRAM).parent}:/hs-programs:ro",
           "-v", f"{workdir}:/hs-run", "-v", f"{lib.build_dir()}:/hs-build:ro", *opts, pm.image,
           *cmd)
    else:
        pm("exec", "-d", *env, container, *cmd)
    tc.wait_ready(fifo, 30.0)
    for d in Path("/proc").iterdir():
        try:
            if fifo.name.encode() in (d / "cmdline").read_bytes():
                with open(d / "status") as f:
                    nspid = next(x for x in f if x.startswith("NSpid:")).split()
                return int(nspid[1] if host else nspid[-1])
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            continue
    raise AssertionError(f"rank {rank} of {container} not found")


CGROUP_TOP = "hs-k8sw-%s"
UIDS = ["0b1d2f3e-4a5b-4c6d-8e7f-90a1b2c3d4e5", "1c2e3a4f-5b6c-4d7e-9f80-a1b2c3d4e5f6"]


def remove_cgroups(top):
    """The cgroup directories podman made under the test's --cgroup-parent, in every hierarchy."""
    for root in Path("/sys/fs/cgroup").glob(f"*/{top}"):
        for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            d.rmdir()
        root.rmdir()


def node_agent_pods(pm, workdir, tag, pids):
    """Job "train-np": pod np-0 on node-a (ranks 0-2 in one container under a kubelet-like
    cgroup parent .../pod<UID>), np-1 on node-b, where no agent runs; the node agent of node-a
    is a privileged container in the host's pid namespace (a hostPID DaemonSet's pod) with
    hangscan at /hs-build. `pids` gets "np": {rank: host pid}."""
    name, agent = f"hs-k8sw-{tag}-np", f"hs-k8sw-{tag}-agent"
    parent = ["--cgroup-parent", f"/{CGROUP_TOP % tag}/kubepods/pod{UIDS[0]}"]
    pids["np"] = {0: start_rank(pm, workdir, name, 0, opts=parent, host=True),
                  1: start_rank(pm, workdir, name, 1, run=False, host=True),
                  2: start_rank(pm, workdir, name, 2, run=False, host=True)}
    pm.containers.append(agent)
    pm("run", "-d", "--runtime", "runc", "--name", agent, "--pid", "host", "--privileged",
       "-v", f"{lib.build_dir()}:/hs-build:ro", pm.image, "sleep", "3600")
    items = [pod_item(f"np-{i}", i, "Running", name, job="train-np") for i in range(2)]
    agent_pod = pod_item("agent-a", 0, "Running", agent, job="none")
    agent_pod["metadata"]["labels"] = {"app": "hangscan-node"}
    agent_pod["spec"] = {"containers": [{"name": "hangscan"}], "nodeName": "node-a"}
    agent_pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] = "hangscan"
    for i, item in enumerate(items):
        item["metadata"]["uid"] = UIDS[i]
        item["spec"]["nodeName"] = f"node-{'ab'[i]}"
    return items + [agent_pod]


@pytest.fixture(scope="module")
def pods():
    pm, workdir, tarball = tc.podman_session("hs-k8sw-")
    tag = uuid.uuid4().hex[:6]
    try:
        tc.probe_podman(pm, tarball)
        a, b, idle = (f"hs-k8sw-{tag}-{n}" for n in ("0", "1", "idle"))
        pids = {0: start_rank(pm, workdir, a, 0), 1: start_rank(pm, workdir, a, 1, run=False),
                2: start_rank(pm, workdir, b, 2)}
        start_rank(pm, workdir, idle, ODD)
        broken = pod_item("train-2", 2, "Running", a, job="train-wx")
        broken["spec"]["containers"] = [{"name": "sidecar"}]  # no "trainer": exec fails
        items = [pod_item(f"train-{i}", i, "Running", name, job=job)
                 for job in ("train-w", "train-wx") for i, name in enumerate((a, b))]
        items += [broken, pod_item("idle-0", 0, "Running", idle, job="train-idle")]
        items += node_agent_pods(pm, workdir, tag, pids)
        (workdir / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": items}))
        env = dict(pm.env, HS_K8S_PODS=str(workdir / "pods.json"),
                   PATH=f"{STANDIN}:{os.environ['PATH']}", HS_TEST_IMAGE=pm.image,
                   HS_K8S_DEBUG_VOLUMES=f"{lib.build_dir()}:/hs-debug:ro")
        yield env, pids
    finally:
        pm.containers.reverse()
        pm.close()
        shutil.rmtree(workdir, ignore_errors=True)
        remove_cgroups(CGROUP_TOP % tag)


def watch(env, selector, *args):
    return lib.run_hangscan(["watch", "--k8s", selector, "--match", "py_k8s_watch_rank",
                             "--agent-path", "/hs-build/hangscan", "--for", "3", *args],
                            env=env, timeout=90)


def python_frames(frames):
    return [(f["function"], f["line"]) for f in frames if f["kind"] == "python"]


def test_watch_every_pod_names_the_blocked_rank(pods, tmp_path):
    env, pids = pods
    page = tmp_path / "watch.html"
    run = watch(env, "job-name=train-w", "--json", "--html", str(page))
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert run.stderr.splitlines()[0] == (
        "hangscan: watching 2 pods of 'job-name=train-w' for 3 s (ptrace samples in each pod); "
        "SIGINT ends every pod's window and reports")
    assert doc["job_id"] == "job-name=train-w"
    assert sorted((n["node"], n["recorder"], n["processes"]) for n in doc["nodes"]) == [
        ("train-0", "ptrace", 2), ("train-1", "ptrace", 1)]
    assert doc["unreachable"] == []
    ranks = [(p["rank"], p["node"], p["pid"]) for p in doc["processes"]]
    assert ranks == [(0, "train-0", pids[0]), (1, "train-0", pids[1]), (2, "train-1", pids[2])]
    assert pids[0] == pids[2] == 1  # each pod's first process
    assert doc["suspects"] == [ODD]
    assert [(g["ranks"], g["suspect"]) for g in doc["groups"]] == [([1], True), ([0, 2], False)]
    assert doc["groups"][0]["what"].startswith("stuck in clock_nanosleep() ("), doc["groups"]
    assert doc["groups"][0]["what"].endswith(" s, since before the window)"), doc["groups"]
    assert doc["groups"][1]["what"] == "active (on CPU 100%, 0 waits ended)", doc["groups"]
    for p in doc["processes"]:
        if p["rank"] == ODD:
            assert p["samples"] == 0 and p["waits"][0]["syscall"] == "clock_nanosleep", p
            continue
        # Every sample is in step()'s line (or the generator expression on it), or in the loop's
        # call of step() between two calls (a sample can land there: seen once under load).
        assert p["samples"] > 0, p
        outer = [("train", MARKS["train"]), ("<module>", MARKS["module"])]
        for stack in p["top_stacks"]:
            frames = python_frames(stack["frames"])
            assert frames[-3:] == [("step", MARKS["step"])] + outer or frames == outer, frames
    # The page embeds the merged window exactly.
    assert page_document(page.read_text()) == doc


def test_watch_pod_whose_exec_fails_is_partial_with_its_reason(pods):
    env, pids = pods
    run = watch(env, "job-name=train-wx", "--json")
    assert run.rc == 1, run.describe()
    assert run.doc["unreachable"] == [
        {"node": "train-2",
         "reason": 'kubectl exec: error: unable to upgrade connection: container not found '
                   '("trainer")'}]
    assert sorted(n["node"] for n in run.doc["nodes"]) == ["train-0", "train-1"]
    assert run.doc["suspects"] == [ODD]


def test_watch_k8s_flags_are_checked(pods):
    env, _ = pods
    run = lib.run_hangscan(["watch", "--k8s", "job-name=train-w", "--for", "1",
                            "--agent-path", "/hs-build/hangscan"], env=env)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [
        "hangscan: watch --k8s needs --match REGEX: the ranks' command line in every pod",
        "hint: e.g. hangscan watch --k8s job-name=train-42 --match train.py --agent-path PATH"]
    run = lib.run_hangscan(["watch", "--k8s", "job-name=train-w", "--match", "x", "--for", "1"],
                           env=env)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines()[0] == \
        "hangscan: watch --k8s needs --agent-path: where hangscan is inside the pods"
    run = lib.run_hangscan(["watch", "--match", "x", "--for", "1", "--agent-path", "/a/hangscan"],
                           env=env)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [
        "hangscan: --namespace, --container, --agent-path, --debug-image and --node-agent go "
        "with --k8s",
        "hint: see 'hangscan watch --help'"]
    run = lib.run_hangscan(["watch", "--k8s", "job-name=train-w", "--match", "x", "--for", "1",
                            "--agent-path", "/a/hangscan", "--node-agent", "app=a",
                            "--debug-image", "img"], env=env)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [
        "hangscan: --node-agent and --debug-image both say where the watches run",
        "hint: --node-agent SELECTOR when a hostPID DaemonSet runs hangscan on every node, else "
        "--debug-image IMAGE"]


def test_watchdog_across_pods_fires_and_its_bundle_names_the_frames(pods, tmp_path):
    """--stall: the pod's watch ends when its rank made no progress for 2 s, the front end
    fires and the bundle holds the capture of every pod (the k8s launcher's agent)."""
    env, _ = pods
    run = lib.run_hangscan(["watch", "--k8s", "job-name=train-idle", "--match",
                            "py_k8s_watch_rank", "--agent-path", "/hs-build/hangscan",
                            "--stall", "2", "--once", "--output", str(tmp_path)],
                           env=env, timeout=90)
    assert run.rc == 0, run.describe()
    assert run.stderr.splitlines()[0] == (
        "hangscan: watchdog on 1 pod of 'job-name=train-idle': fires when no rank in any pod "
        "made progress for 2 s")
    bundles = list(tmp_path.iterdir())
    # The quiet time measured when the front end fired: at least the stall time, more by the
    # nodes' check period and, on a loaded machine, a late wake-up (3 s seen at load 8).
    m = re.fullmatch(r"hangscan: stall: no rank on any node made progress for (\d+) s; capture "
                     r"written to (\S+)\n", run.stdout)
    assert m and len(bundles) == 1 and m.group(2) == str(bundles[0]), run.stdout
    assert 2 <= int(m.group(1)) <= 4, run.stdout
    report = json.loads((bundles[0] / "report.json").read_text())
    [proc] = report["processes"]
    assert (proc["rank"], proc["host"], proc["pid"]) == (ODD, "idle-0", 1)
    main = next(t for t in proc["threads"] if t["tid"] == 1)
    assert python_frames(main["frames"]) == [
        ("load_checkpoint", MARKS["load_checkpoint"]), ("train", MARKS["train_odd"]),
        ("<module>", MARKS["module"])]
    timeline = json.loads((bundles[0] / "timeline.json").read_text())
    assert [n["node"] for n in timeline["nodes"]] == ["idle-0"]
    assert timeline["nodes"][0]["recorder"] == "ptrace"


def node_watches():
    """Pod name -> whether its node-local watch (seen in the host's /proc) blocks SIGUSR1 by
    now: only then does `watch --end-window` signal it."""
    seen = {}
    for d in Path("/proc").iterdir():
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            status = (d / "status").read_text()
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError, PermissionError):
            continue
        if b"--node-local" not in argv or b"--node" not in argv or b"watch" not in argv:
            continue
        blocked = [int(x.split()[1], 16) for x in status.splitlines() if x.startswith("SigBlk:")]
        node = argv[argv.index(b"--node") + 1].decode()
        seen[node] = bool(blocked and blocked[0] & (1 << (signal.SIGUSR1 - 1)))
    return seen


def interrupted_watch(env, selector, watched, *args):
    """`watch --k8s SELECTOR ... --for 120 --json` interrupted with SIGINT once the watches of
    the pods `watched` block SIGUSR1; (exit code, its JSON, stderr, seconds from the SIGINT to
    the end). The pods' watches must end too."""
    proc = subprocess.Popen([lib.hangscan_bin(), "watch", "--k8s", selector, "--match",
                             "py_k8s_watch_rank", *args, "--for", "120", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        lib.wait_for(lambda: all(node_watches().get(p) for p in watched), 60,
                     "the pods' watches to block SIGUSR1")
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lib.wait_for(lambda: not node_watches(), 20, "the pods' watches to end")
    return proc.returncode, json.loads(out) if out else None, err.decode(), took


def test_sigint_ends_every_pod_s_window_and_each_still_reports(pods):
    """kubectl exec passes no signal: the front end runs `watch --end-window --node POD` in each
    pod, which sends SIGUSR1 to that pod's watch."""
    env, pids = pods
    rc, doc, err, took = interrupted_watch(env, "job-name=train-w", ["train-0", "train-1"],
                                           "--agent-path", "/hs-build/hangscan")
    assert rc == 0, err
    assert took < 20, took
    assert sorted(n["node"] for n in doc["nodes"]) == ["train-0", "train-1"]
    assert all(n["window_s"] < 60 for n in doc["nodes"]), doc["nodes"]
    assert [(p["rank"], p["node"], p["pid"]) for p in doc["processes"]] == [
        (0, "train-0", pids[0]), (1, "train-0", pids[1]), (2, "train-1", pids[2])]
    assert doc["suspects"] == [ODD]


def test_watch_from_ephemeral_containers(pods):
    """--debug-image: the watch runs in an ephemeral container of the image (hangscan at
    /hs-debug there) in each trainer's pid namespace (kubectl debug --target); none is left."""
    env, pids = pods
    names = ["podman", "ps", "-a", "--format", "{{.Names}}"]

    def ours():  # this file's containers only: test_k8s.py's pods may come and go beside it
        out = subprocess.run(names, env=env, capture_output=True, text=True, check=True).stdout
        return sorted(n for n in out.split() if n.startswith("hs-k8sw-"))

    before = ours()
    run = lib.run_hangscan(["watch", "--k8s", "job-name=train-w", "--match", "py_k8s_watch_rank",
                            "--debug-image", env["HS_TEST_IMAGE"], "--agent-path",
                            "/hs-debug/hangscan", "--for", "3", "--json"], env=env, timeout=90)
    assert run.rc == 0, run.describe()
    assert [(p["rank"], p["node"], p["pid"]) for p in run.doc["processes"]] == [
        (0, "train-0", pids[0]), (1, "train-0", pids[1]), (2, "train-1", pids[2])]
    assert run.doc["suspects"] == [ODD]
    assert ours() == before


def test_sigint_ends_the_windows_in_ephemeral_containers(pods):
    """--debug-image: the watch runs in the round's ephemeral container; SIGINT reaches it by
    `kubectl exec POD -c hangscan-XXXXXXXX -- ... watch --end-window` (on the old code the
    windows ran their whole --for)."""
    env, pids = pods
    rc, doc, err, took = interrupted_watch(env, "job-name=train-w", ["train-0", "train-1"],
                                           "--debug-image", env["HS_TEST_IMAGE"],
                                           "--agent-path", "/hs-debug/hangscan")
    assert rc == 0, err
    assert took < 20, took
    assert all(n["window_s"] < 60 for n in doc["nodes"]), doc["nodes"]
    assert [(p["rank"], p["node"], p["pid"]) for p in doc["processes"]] == [
        (0, "train-0", pids[0]), (1, "train-0", pids[1]), (2, "train-1", pids[2])]


NODE_AGENT = ["--node-agent", "app=hangscan-node", "--match", "py_k8s_watch_rank",
              "--agent-path", "/hs-build/hangscan"]
NO_AGENT = {"reason": "no Running node agent pod (app=hangscan-node) on node node-b"}


def test_dump_through_the_node_agent_finds_the_pod_by_its_cgroup(pods):
    """`hangscan k8s --node-agent`: np-0's agent runs in the hostPID agent pod of node-a and
    takes the processes whose cgroup names np-0's UID (by host pid); the other pods' ranks of
    the same --match on this host are not taken; np-1's node has no agent."""
    env, pids = pods
    run = lib.run_hangscan(["k8s", "job-name=train-np", *NODE_AGENT, "--timeout", "60",
                            "--json"], env=env, timeout=90)
    assert run.rc == 1, run.describe()
    doc = run.doc
    assert [(p["rank"], p["host"], p["pid"]) for p in doc["processes"]] == [
        (0, "np-0", pids["np"][0]), (1, "np-0", pids["np"][1]), (2, "np-0", pids["np"][2])]
    assert {p["container"]["pod_uid"] for p in doc["processes"]} == {UIDS[0]}
    assert doc["unreachable"] == [dict(host="np-1", **NO_AGENT)]
    odd = doc["processes"][1]
    main = next(t for t in odd["threads"] if t["tid"] == odd["pid"])
    none = lib.run_hangscan(["k8s", "job-name=train-np", "--node-agent", "app=none",
                             *NODE_AGENT[2:]], env=env)
    assert none.rc == 64, none.describe()
    assert none.stderr.splitlines()[0] == \
        "hangscan: no pods match the node agent selector 'app=none'"
    assert python_frames(main["frames"]) == [
        ("load_checkpoint", MARKS["load_checkpoint"]), ("train", MARKS["train_odd"]),
        ("<module>", MARKS["module"])]


def test_watch_through_the_node_agent_records_with_ebpf_by_host_pid(pods):
    """`watch --k8s --node-agent` (run under flock /tmp/hs-bpf.lock): the node-local watch in
    the agent pod records np-0's ranks by host pid with eBPF (as root, the host's pid
    namespace), rank 1 the one suspect, rank 0's samples in step()."""
    env, pids = pods
    run = lib.run_hangscan(["watch", "--k8s", "job-name=train-np", *NODE_AGENT, "--for", "3",
                            "--json"], env=env, timeout=90)
    assert run.rc == 1, run.describe()
    assert run.stderr.splitlines()[0] == (
        "hangscan: watching 2 pods of 'job-name=train-np' for 3 s (from the node agents); "
        "SIGINT ends every pod's window and reports")
    doc = run.doc
    assert [(n["node"], n["recorder"], n["processes"]) for n in doc["nodes"]] == [
        ("np-0", "ebpf", 3)]
    assert doc["unreachable"] == [dict(node="np-1", **NO_AGENT)]
    assert [(p["rank"], p["node"], p["pid"]) for p in doc["processes"]] == [
        (0, "np-0", pids["np"][0]), (1, "np-0", pids["np"][1]), (2, "np-0", pids["np"][2])]
    assert doc["suspects"] == [ODD]
    assert [(g["ranks"], g["suspect"]) for g in doc["groups"]] == [([1], True), ([0, 2], False)]
    for p in doc["processes"]:
        if p["rank"] == ODD:
            continue
        # eBPF samples of a process in a pid namespace of its own: its Python frames too.
        assert p["samples"] > 0, p
        for stack in p["top_stacks"]:
            assert python_frames(stack["frames"])[-3:] == [
                ("step", MARKS["step"]), ("train", MARKS["train"]), ("<module>", MARKS["module"])]


def test_sigint_ends_the_window_in_the_node_agent(pods):
    """SIGINT: `kubectl exec AGENT-POD -- ... watch --end-window --node np-0` in the node agent's
    pod ends np-0's watch there, which still reports."""
    env, pids = pods
    rc, doc, err, took = interrupted_watch(env, "job-name=train-np", ["np-0"], *NODE_AGENT[:2],
                                           *NODE_AGENT[4:])
    assert rc == 1, err  # np-1's node has no agent
    assert took < 20, took
    assert [(n["node"], n["window_s"] < 60) for n in doc["nodes"]] == [("np-0", True)]
    assert [(p["rank"], p["node"], p["pid"]) for p in doc["processes"]] == [
        (0, "np-0", pids["np"][0]), (1, "np-0", pids["np"][1]), (2, "np-0", pids["np"][2])]
