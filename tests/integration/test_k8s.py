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


def pod_item(name, index, phase, backing=None, job="train-42"):
    meta = {"name": name, "namespace": "default",
            "labels": {"job-name": job, "batch.kubernetes.io/job-completion-index": str(index)},
            "annotations": {"kubectl.kubernetes.io/default-container": "trainer"}}
    if backing:
        meta["annotations"]["hangscan.test/podman-container"] = backing
    return {"metadata": meta, "spec": {"containers": [{"name": "trainer"}, {"name": "sidecar"}]},
            "status": {"phase": phase}}


@pytest.fixture(scope="module")
def job():
    pm, workdir, tarball = tc.podman_session("hs-k8s-")
    try:
        tc.probe_podman(pm, tarball)
        items = []
        tag = uuid.uuid4().hex[:6]
        for rank in range(WORLD - 1):
            name = f"hs-k8s-{tag}-{rank}"
            fifo = tc.make_fifo(workdir, f"ready-{rank}")
            pm.start(name, "-e", f"RANK={rank}", "-e", f"WORLD_SIZE={WORLD}", "-e", f"ODD_RANK={ODD}",
                     "-v", f"{lib.build_dir()}:/hs-build:ro", fifo=fifo,
                     cmd=["python3", "/hs-programs/py_k8s_rank.py", f"/hs-run/{fifo.name}"])
            running = pm("inspect", "-f", "{{.State.Running}}", name).stdout.strip() == "true"
            items.append(pod_item(f"train-{rank}", rank, "Running" if running else "Failed", name))
        items.append(pod_item(f"train-{WORLD - 1}", WORLD - 1, "Pending"))
        items.append(pod_item("other-0", 0, "Running", f"hs-k8s-{tag}-0", job="other"))
        pods = workdir / "pods.json"
        pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        env = dict(pm.env, HS_K8S_PODS=str(pods), PATH=f"{STANDIN}:{os.environ['PATH']}")
        yield env
    finally:
        pm.close()
        shutil.rmtree(workdir, ignore_errors=True)


def k8s(env, *args):
    return lib.run_hangscan(["k8s", *args, "--agent-path", "/hs-build/hangscan", "--timeout", "60"],
                            env=env)


def test_job_pods_fan_out_merge_and_verdict(job):
    run = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "--json")
    assert run.rc == 1, run.describe()  # partial: the Pending pod gave nothing
    check_job_report(run.doc)


def check_job_report(doc):
    got = sorted((p["rank"], p["host"], p["pid"]) for p in doc["processes"] if p["role"] == "rank")
    assert got == [(r, f"train-{r}", 1) for r in range(WORLD - 1)], doc["processes"]
    # Rank 3's pod is Pending: a missing rank of the job, a suspect without a process.
    assert doc["suspects"] == [ODD, WORLD - 1]
    assert doc["suspect_members"] == [{"host": f"train-{ODD}", "pid": 1, "rank": ODD}]
    assert doc["unreachable"] == [{"host": f"train-{WORLD - 1}", "reason": "pod phase Pending"}]
    odd = next(p for p in doc["processes"] if p["host"] == f"train-{ODD}")
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
        for pod in pods[:WORLD - 1]:
            backing = pod["metadata"]["annotations"]["hangscan.test/podman-container"]
            left = subprocess.run(["podman", "exec", backing, "ls", "/tmp"], env=job,
                                  capture_output=True, text=True, timeout=60)
            assert left.returncode == 0 and "hangscan-agent" not in left.stdout, left
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_copy_agent_that_is_no_dist_tree_is_a_usage_error(job):
    run = lib.run_hangscan(["k8s", "job-name=train-42", "--match", "py_k8s_rank", "--copy-agent",
                            "/nonexistent"], env=job)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [
        "hangscan: --copy-agent /nonexistent: not an unpacked tarball of make dist (no bin/hangscan "
        "and libexec/hangscan in it)",
        "hint: unpack hangscan-VERSION-x86_64-linux.tar.gz and pass its hangscan-VERSION directory"]


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
