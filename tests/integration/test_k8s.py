"""`hangscan k8s SELECTOR`: the agent in every pod of a job through kubectl, merged.

No Kubernetes API server can run here, so kubectl is the stand-in tests/k8s/kubectl (its
docstring says exactly which kubectl behaviour it stands in for): `get pods -o json -l SELECTOR`
answers from a PodList written by the test, and `exec` runs the command in the podman
container that backs the pod. Three "pods" are real podman containers, each running one rank of
tests/programs/py_k8s_rank.py (rank 1 parks elsewhere); a fourth pod of the job is Pending; a
pod of another job must not be asked. The real fan-out, merge and verdict run through it:
every rank from its own pod, rank 1 the suspect, the Pending pod unreachable with its phase;
the same with --copy-agent (the build's tarball copied into the pods, which have no hangscan).

Needs podman, runc and mmdebstrap and root, like test_containers.py (whose image, podman
settings and helpers it uses); skipped with the reason otherwise. Every container and the
image are removed at the end.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

import hs_testlib as lib
import test_containers as tc

RANK_PROGRAM = lib.program_source("py_k8s_rank.py")
STANDIN = lib.source_dir() / "tests" / "k8s"
WORLD, ODD = 4, 1
MARKS = {}
for n, line in enumerate(RANK_PROGRAM.read_text().splitlines(), 1):
    if "# MARK " in line:
        MARKS[line.rsplit("# MARK ", 1)[1].strip()] = n


def pod_item(name, index, phase, backing=None, job="train-42", sidecar=None):
    """A pod of the PodList; `sidecar`: the podman container behind its "hangscan" container."""
    meta = {"name": name, "namespace": "default",
            "labels": {"job-name": job, "batch.kubernetes.io/job-completion-index": str(index)},
            "annotations": {"kubectl.kubernetes.io/default-container": "trainer"}}
    if backing:
        meta["annotations"]["hangscan.test/podman-container"] = backing
    if sidecar:
        meta["annotations"]["hangscan.test/podman-container.hangscan"] = sidecar
    return {"metadata": meta, "spec": {"containers": [{"name": "trainer"}, {"name": "hangscan"}]},
            "status": {"phase": phase}}


def start_rank(pm, workdir, name, rank, *opts):
    """A container running one rank; its host pid and container id."""
    fifo = tc.make_fifo(workdir, f"ready-{name}")
    return pm.start(name, "-e", f"RANK={rank}", "-e", f"WORLD_SIZE={WORLD}", "-e",
                      f"ODD_RANK={ODD}", *opts, fifo=fifo,
                      cmd=["python3", "/hs-programs/py_k8s_rank.py", f"/hs-run/{fifo.name}"])


def start_shared_pid_pod(pm, workdir, name, rank):
    """A pod with shareProcessNamespace, as Kubernetes makes it: a pause container holds the pid
    namespace (pid 1), the trainer and a "hangscan" sidecar join it; the sidecar has SYS_PTRACE
    and hangscan at /hs-sidecar (the trainer has none there). The trainer's pid in the pod and
    its container id."""
    pm.containers.append(f"{name}-pause")
    pm("run", "-d", "--runtime", "runc", "--name", f"{name}-pause", pm.image, "sleep", "3600")
    shared = ["--pid", f"container:{name}-pause"]
    host_pid, cid = start_rank(pm, workdir, name, rank, *shared)
    pm.containers.append(f"{name}-sc")
    pm("run", "-d", "--runtime", "runc", "--name", f"{name}-sc", *shared, "--cap-add",
       "SYS_PTRACE", "-v", f"{lib.build_dir()}:/hs-sidecar:ro", pm.image, "sleep", "3600")
    with open(f"/proc/{host_pid}/status") as f:
        nspid = next(line for line in f if line.startswith("NSpid:"))
    return int(nspid.split()[-1]), cid


PREVIOUS_RUN = f"""
print("rank {ODD}: step 16 done", flush=True)
raise RuntimeError("rank {ODD}: NaN in the loss at step 17")
"""


def restarted_job(pm, prefix):
    """Pods of job "train-rs" over the same trainers, rank 1's container restarted once: its
    previous run (an exited container whose rank raised) is what kubectl logs --previous
    shows."""
    previous = f"{prefix}-previous"
    pm.containers.append(previous)
    pm("run", "--runtime", "runc", "--name", previous, pm.image, "python3", "-c", PREVIOUS_RUN,
       check=False)
    pods = []
    for rank in range(WORLD - 1):
        pod = pod_item(f"rs-{rank}", rank, "Running", f"{prefix}-{rank}", "train-rs")
        if rank == ODD:
            pod["metadata"]["annotations"]["hangscan.test/podman-previous"] = previous
            pod["status"]["containerStatuses"] = [{"name": "trainer", "restartCount": 1}]
        pods.append(pod)
    return pods


@pytest.fixture(scope="module")
def job():
    pm, workdir, tarball = tc.podman_session("hs-k8s-")
    try:
        tc.probe_podman(pm, tarball)
        items = []
        tag = uuid.uuid4().hex[:6]
        sidecar_pids, cids = {}, {}
        for rank in range(WORLD - 1):
            name = f"hs-k8s-{tag}-{rank}"
            _, cids[f"train-{rank}"] = start_rank(pm, workdir, name, rank,
                                                  "-v", f"{lib.build_dir()}:/hs-build:ro")
            running = pm("inspect", "-f", "{{.State.Running}}", name).stdout.strip() == "true"
            items.append(pod_item(f"train-{rank}", rank, "Running" if running else "Failed", name))
            sidecar_pids[rank], cids[f"sc-{rank}"] = start_shared_pid_pod(pm, workdir,
                                                                          f"{name}-shared", rank)
            items.append(pod_item(f"sc-{rank}", rank, "Running", f"{name}-shared", "train-sc",
                                  f"{name}-shared-sc"))
        items += restarted_job(pm, f"hs-k8s-{tag}")
        items.append(pod_item(f"train-{WORLD - 1}", WORLD - 1, "Pending"))
        items.append(pod_item(f"sc-{WORLD - 1}", WORLD - 1, "Pending", job="train-sc"))
        items.append(pod_item("other-0", 0, "Running", f"hs-k8s-{tag}-0", job="other"))
        pods = workdir / "pods.json"
        pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        env = dict(pm.env, HS_K8S_PODS=str(pods), PATH=f"{STANDIN}:{os.environ['PATH']}",
                   HS_K8S_DEBUG_VOLUMES=f"{lib.build_dir()}:/hs-debug:ro", HS_TEST_IMAGE=pm.image,
                   HS_TEST_SIDECAR_PIDS=json.dumps(sidecar_pids), HS_TEST_CIDS=json.dumps(cids))
        yield env
    finally:
        # Last started, first removed: podman refuses to remove a container whose pid namespace
        # others share.
        pm.containers.reverse()
        pm.close()
        shutil.rmtree(workdir, ignore_errors=True)


def k8s(env, *args, agent="/hs-build/hangscan"):
    return lib.run_hangscan(["k8s", *args, "--agent-path", agent, "--timeout", "60"], env=env)


def test_job_pods_fan_out_merge_and_verdict(job):
    run = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "--json")
    assert run.rc == 1, run.describe()  # partial: the Pending pod gave nothing
    check_job_report(run.doc, cids=json.loads(job["HS_TEST_CIDS"]))
    assert run.stderr.splitlines() == [
        f"hangscan: node train-{WORLD - 1} unreachable: pod phase Pending",
        f"hint: {WORLD - 1} of {WORLD} nodes reported; check the others with 'kubectl describe "
        "pod NAME', or raise --timeout"]


def check_job_report(doc, pod="train", pids=None, cids=None):
    """`pids`: each rank's pid in its pod (default 1: a pod without shareProcessNamespace);
    `cids`: pod -> the trainer's container id, which the report must name (from wherever the
    agent ran: the trainer, a sidecar, a debug container)."""
    pids = pids or {r: 1 for r in range(WORLD - 1)}
    got = sorted((p["rank"], p["host"], p["pid"]) for p in doc["processes"] if p["role"] == "rank")
    assert got == [(r, f"{pod}-{r}", pids[r]) for r in range(WORLD - 1)], doc["processes"]
    if cids:
        named = {p["host"]: (p["container"]["runtime"], p["container"]["id"])
                 for p in doc["processes"]}
        assert named == {f"{pod}-{r}": ("podman", cids[f"{pod}-{r}"]) for r in range(WORLD - 1)}
    # Rank 3's pod is Pending: a missing rank of the job, a suspect without a process.
    assert doc["suspects"] == [ODD, WORLD - 1]
    assert doc["suspect_members"] == [{"host": f"{pod}-{ODD}", "pid": pids[ODD], "rank": ODD}]
    assert doc["unreachable"] == [{"host": f"{pod}-{WORLD - 1}", "reason": "pod phase Pending"}]
    odd = next(p for p in doc["processes"] if p["host"] == f"{pod}-{ODD}")
    main = next(t for t in odd["threads"] if t["tid"] == odd["pid"])
    frames = [[f["function"], f["line"]] for f in main["frames"] if f["kind"] == "python"]
    assert frames == [["load_checkpoint", MARKS["load_checkpoint"]], ["train", MARKS["train_odd"]],
                      ["<module>", MARKS["module"]]]


def test_copy_agent_into_pods_without_hangscan(job):
    """--copy-agent: the image has no hangscan, so the unpacked tarball of this build
    (tools/dist.sh) is copied into every running pod (kubectl cp), run there, and removed."""
    out = Path(tempfile.mkdtemp(prefix="hs-k8s-dist-"))
    try:
        made = subprocess.run([str(lib.source_dir() / "tools" / "dist.sh"), str(lib.build_dir()),
                               str(out)], capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr
        subprocess.run(["tar", "-C", str(out), "-xzf", made.stdout.split()[-1]], check=True)
        tree = next(p for p in out.iterdir() if p.is_dir())
        run = lib.run_hangscan(["k8s", "job-name=train-42", "--match", "py_k8s_rank", "--copy-agent",
                                str(tree), "--json", "--timeout", "60"], env=job)
        assert run.rc == 1, run.describe()
        check_job_report(run.doc)
        pods = json.loads(Path(job["HS_K8S_PODS"]).read_text())["items"]
        for pod in [p for p in pods if p["metadata"]["name"] in
                    [f"train-{r}" for r in range(WORLD - 1)]]:
            backing = pod["metadata"]["annotations"]["hangscan.test/podman-container"]
            left = subprocess.run(["podman", "exec", backing, "ls", "/tmp"], env=job,
                                  capture_output=True, text=True, timeout=60)
            assert left.returncode == 0 and "hangscan-agent" not in left.stdout, left
    finally:
        shutil.rmtree(out, ignore_errors=True)


USAGE_ERRORS = {
    "copy_agent_no_dist_tree": (["--copy-agent", "/nonexistent"], [
        "hangscan: --copy-agent /nonexistent: not an unpacked tarball of make dist (no bin/hangscan "
        "and libexec/hangscan in it)",
        "hint: unpack hangscan-VERSION-x86_64-linux.tar.gz and pass its hangscan-VERSION "
        "directory"]),
    "gcore_dir_relative": (["--agent-path", "/a/hangscan", "--gcore", "--gcore-dir", "cores"], [
        "hangscan: --gcore-dir cores: the cores are written inside the pods, where this directory "
        "means nothing",
        "hint: give an absolute path inside the pods, e.g. --gcore-dir /tmp (the default)"]),
    "debug_image_gcore": (["--debug-image", "img", "--agent-path", "/a/hangscan", "--gcore"], [
        "hangscan: --gcore with --debug-image: a core written in an ephemeral container is lost "
        "when the container ends",
        "hint: write cores with --agent-path (hangscan in the pod's image or a volume) or "
        "--copy-agent"]),
    "pod_log_file_relative": (["--agent-path", "/a/hangscan", "--pod-log-file", "train.log"], [
        "hangscan: --pod-log-file train.log: not an absolute path inside the pods",
        "hint: name the file as the pod's container sees it, e.g. --pod-log-file /logs/train.log"]),
    "debug_image_copy_agent": (["--debug-image", "img", "--copy-agent", "/nonexistent"], [
        "hangscan: --debug-image and --copy-agent both say how the agent gets into the pods",
        "hint: --debug-image IMAGE when an image holds hangscan, else --copy-agent DIR"]),
}


@pytest.mark.parametrize("case", sorted(USAGE_ERRORS))
def test_usage_errors(job, case):
    args, expected = USAGE_ERRORS[case]
    run = lib.run_hangscan(["k8s", "job-name=train-42", "--match", "py_k8s_rank", *args], env=job)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == expected


def test_selector_without_pods_is_a_usage_error(job):
    run = k8s(job, "job-name=nope", "--match", "py_k8s_rank")
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [
        "hangscan: no pods match the selector 'job-name=nope'",
        "hint: list the job's labels with kubectl get pods --show-labels, e.g. job-name=NAME or "
        "training.kubeflow.org/job-name=NAME"]


def test_container_not_in_the_pod_is_unreachable_with_kubectls_reason(job):
    run = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "-c", "nope", "--json")
    assert run.rc == 2, run.describe()
    reasons = {u["host"]: u["reason"] for u in run.doc["unreachable"]}
    assert reasons == {**{f"train-{r}": 'kubectl exec: error: unable to upgrade connection: '
                          'container not found ("nope")' for r in range(WORLD - 1)},
                       f"train-{WORLD - 1}": "pod phase Pending"}


def job_containers(env):
    """The podman containers of this test's image (names), to see that nothing was left behind
    (other tests on the machine may run containers of their own meanwhile)."""
    out = subprocess.run(["podman", "ps", "-a", "--filter", f"ancestor={env['HS_TEST_IMAGE']}",
                          "--format", "{{.Names}}"], env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    return sorted(out.stdout.split())


def test_debug_image_runs_the_agent_in_an_ephemeral_container(job):
    """--debug-image: neither the pods' image nor a copy holds the agent; kubectl debug starts a
    container of the debug image (hangscan at /hs-debug there) in each trainer's pid namespace
    with --profile=general, and its output is the pod's answer. Nothing is left running."""
    before = job_containers(job)
    run = lib.run_hangscan(["k8s", "job-name=train-42", "--match", "py_k8s_rank", "--debug-image",
                            job["HS_TEST_IMAGE"], "--agent-path", "/hs-debug/hangscan", "--json",
                            "--timeout", "60", "-v"], env=job)
    assert run.rc == 1, run.describe()
    check_job_report(run.doc, cids=json.loads(job["HS_TEST_CIDS"]))
    debug = [line for line in run.stderr.splitlines() if " debug " in line]
    assert len(debug) == WORLD - 1, run.stderr
    assert all(re.search(r"--target=trainer --profile=general --attach=true --quiet "
                         r"--container=hangscan-[0-9a-f]{8} -- /hs-debug/hangscan agent ", line)
               for line in debug), debug
    assert job_containers(job) == before


def test_debug_image_output_from_the_containers_log_when_the_attach_came_late(job):
    """kubectl debug attaches only once it has seen the container running; an agent done by
    then is lost to the attach (the stand-in's HS_K8S_DEBUG_LATE_ATTACH). Its document is in
    the debug container's log: read with kubectl logs -c NAME, the same verdict."""
    before = job_containers(job)
    env = dict(job, HS_K8S_DEBUG_LATE_ATTACH="1")
    try:
        run = lib.run_hangscan(["k8s", "job-name=train-42", "--match", "py_k8s_rank",
                                "--debug-image", job["HS_TEST_IMAGE"], "--agent-path",
                                "/hs-debug/hangscan", "--json", "--timeout", "60", "-v"], env=env)
        assert run.rc == 1, run.describe()
        check_job_report(run.doc, cids=json.loads(job["HS_TEST_CIDS"]))
        names = re.findall(r"--container=(hangscan-[0-9a-f]{8}) ", run.stderr)
        assert len(names) == WORLD - 1 and len(set(names)) == 1, run.stderr
        logs = sorted(re.sub(r"\d+ ms$", "N ms", line) for line in run.stderr.splitlines()
                      if " kubectl logs " in line)
        assert logs == [f"hangscan: kubectl logs -n default train-{r} -c {names[0]} -> exit 0 "
                        "in N ms" for r in range(WORLD - 1)], run.stderr
    finally:
        for name in set(job_containers(job)) - set(before):  # ephemeral containers stay
            subprocess.run(["podman", "rm", "-f", "-t", "0", name], env=job, timeout=60)
    assert job_containers(job) == before


def test_sidecar_sharing_the_pods_pid_namespace(job):
    """A pod with shareProcessNamespace: the agent runs in its "hangscan" sidecar (hangscan at
    /hs-sidecar, which the trainer has not), sees the trainer's rank beside the pause process
    (pid 1), reads its sources through /proc/PID/root: the same ranks and frames as from inside
    the trainer, with the pids of the pod's namespace."""
    run = k8s(job, "job-name=train-sc", "--match", "py_k8s_rank", "-c", "hangscan", "--json",
              agent="/hs-sidecar/hangscan")
    assert run.rc == 1, run.describe()
    pids = {int(r): p for r, p in json.loads(job["HS_TEST_SIDECAR_PIDS"]).items()}
    assert all(p != 1 for p in pids.values()), pids
    check_job_report(run.doc, pod="sc", pids=pids, cids=json.loads(job["HS_TEST_CIDS"]))
    # The trainer itself has no /hs-sidecar: the agent did run in the sidecar.
    run = k8s(job, "job-name=train-sc", "--match", "py_k8s_rank", "--json",
              agent="/hs-sidecar/hangscan")
    assert run.rc == 2, run.describe()


def test_gcore_writes_cores_inside_the_pods(job):
    """--gcore: the core round runs the agent in the pods again; each core is written inside
    its pod (default --gcore-dir /tmp there: the front end's directory means nothing in a pod)
    and named with the pod, reported as pdsh and Slurm report theirs."""
    run = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "--gcore", "suspects")
    pods = json.loads(Path(job["HS_K8S_PODS"]).read_text())["items"]
    backing = next(p["metadata"]["annotations"]["hangscan.test/podman-container"] for p in pods
                   if p["metadata"]["name"] == f"train-{ODD}")
    core = f"/tmp/core.train-{ODD}.rank{ODD}.1"
    try:
        assert run.rc == 1, run.describe()
        lines = [line for line in run.stderr.splitlines() if "core" in line]
        assert len(lines) == 2, run.stderr
        assert re.fullmatch(rf"hangscan: core of rank {ODD} on train-{ODD} \(pid 1, suspect\): "
                            rf"{re.escape(core)} \([0-9.]+[KM], paused [0-9.]+ ms\)",
                            lines[0]), lines
        assert re.fullmatch(r"hangscan: 1 of 1 cores written in /tmp on 1 node\(s\), [0-9.]+ s",
                            lines[1]), lines
        read = subprocess.run(["podman", "exec", backing, "/hs-build/hangscan", "core", core,
                               "--json"], env=job, capture_output=True, text=True, timeout=60)
        doc = json.loads(read.stdout)
        main = next(t for t in doc["processes"][0]["threads"] if t["tid"] == 1)
        frames = [[f["function"], f["line"]] for f in main["frames"] if f["kind"] == "python"]
        assert frames == [["load_checkpoint", MARKS["load_checkpoint"]],
                          ["train", MARKS["train_odd"]], ["<module>", MARKS["module"]]]
    finally:
        subprocess.run(["podman", "exec", backing, "rm", "-f", core], env=job, timeout=60)


def test_pod_logs_join_each_ranks_last_line_with_its_stack(job):
    """--pod-logs: kubectl logs of every pod that answered; a pod of one rank is that rank's
    log, so its last line stands beside the rank's stack (the suspect's in its SUSPECT line)."""
    run = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "--json", "--pod-logs")
    assert run.rc == 1, run.describe()
    check_job_report(run.doc)
    got = [(e["rank"], e["file"], e["line"], e["kind"], e["text"], e["where"])
           for e in run.doc["last_logs"]]
    assert got == [(r, f"kubectl logs train-{r}", 1, "last_line",
                    f"rank {r}: loading checkpoint step-42" if r == ODD
                    else f"rank {r}: all_reduce of step 17",
                    f"load_checkpoint (py_k8s_rank.py:{MARKS['load_checkpoint']})" if r == ODD
                    else f"all_reduce (py_k8s_rank.py:{MARKS['all_reduce']})")
                   for r in range(WORLD - 1)], run.doc["last_logs"]
    # kubectl logs --timestamps: each rank's line was printed before its "ready", seconds before
    # the capture (the times themselves are stripped from the text above).
    assert all(0 <= e["before_capture_s"] < 60 for e in run.doc["last_logs"]), run.doc["last_logs"]
    text = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "--pod-logs")
    suspect = [line for line in text.stdout.splitlines() if line.startswith(f"SUSPECT rank {ODD}")]
    assert len(suspect) == 1 and re.search(
        rf'last log: "rank {ODD}: loading checkpoint step-42" \(kubectl logs train-{ODD}:1, '
        r'\d+ s before the dump\)$', suspect[0]), text.stdout


def test_pod_log_files_read_inside_each_pod(job):
    """--pod-log-file: a file inside every pod (the rank's /tmp/train.log), read there by
    kubectl exec tail as the container's user; one that is missing is named per pod on stderr
    and changes nothing else."""
    run = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "--json", "--pod-log-file",
              "/tmp/train.log", "--pod-log-file", "/nonexistent.log")
    assert run.rc == 1, run.describe()
    check_job_report(run.doc)
    got = [(e["rank"], e["file"], e["line"], e["text"]) for e in run.doc["last_logs"]]
    assert got == [(r, f"train-{r}:/tmp/train.log", 2,
                    f"rank {r}: loading checkpoint step-42 (file)" if r == ODD
                    else f"rank {r}: all_reduce of step 17 (file)") for r in range(WORLD - 1)], got
    missing = [line for line in run.stderr.splitlines() if "nonexistent" in line]
    assert missing == [f"hangscan: --logs: train-{r}:/nonexistent.log: kubectl exec tail: tail: "
                       "cannot open '/nonexistent.log' for reading: No such file or directory"
                       for r in range(WORLD - 1)], run.stderr


def test_pod_logs_of_a_restarted_container(job):
    """--pod-logs after a restart (restartCount 1 in the pod list): the run before it
    (kubectl logs --previous) is read too, so the exception rank 1 raised there is its last word,
    beside where it is stuck now; pods that never restarted are not asked for one (-v lists the
    kubectl calls)."""
    run = k8s(job, "job-name=train-rs", "--match", "py_k8s_rank", "--json", "--pod-logs", "-v")
    assert run.rc == 0, run.describe()
    asked = sorted(re.sub(r"-> exit 0 in \d+ ms$", "", line) for line in run.stderr.splitlines()
                   if line.startswith("hangscan: logs: "))
    assert asked == sorted(
        [f"hangscan: logs: kubectl logs rs-{r} --tail=20000 --timestamps " for r in range(3)]
        + [f"hangscan: logs: kubectl logs rs-{ODD} --previous --tail=20000 --timestamps "]), \
        run.stderr
    got = [(e["rank"], e["file"], e["kind"], e["text"]) for e in run.doc["last_logs"]]
    assert got == [(0, "kubectl logs rs-0", "last_line", "rank 0: all_reduce of step 17"),
                   (ODD, f"kubectl logs --previous rs-{ODD}", "exception",
                    f"RuntimeError: rank {ODD}: NaN in the loss at step 17"),
                   (2, "kubectl logs rs-2", "last_line", "rank 2: all_reduce of step 17")], got
    text = k8s(job, "job-name=train-rs", "--match", "py_k8s_rank", "--pod-logs")
    suspect = [line for line in text.stdout.splitlines() if line.startswith(f"SUSPECT rank {ODD}")]
    assert len(suspect) == 1 and re.search(
        rf'-> load_checkpoint \(py_k8s_rank.py:{MARKS["load_checkpoint"]}\); last log: '
        rf'"RuntimeError: rank {ODD}: NaN in the loss at step 17" \(kubectl logs --previous '
        rf'rs-{ODD}:4, \d+ s before the dump\)$', suspect[0]), text.stdout
