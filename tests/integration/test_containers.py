"""Processes in real podman containers, seen from the host and from inside.

- From the host: a Python process in a container is dumped by its host pid with exact Python
  frames, its rank from the container process's own environment, and the container named in
  JSON (`container`: runtime, id, podman's name) and on the text's process line; after the
  container's python binary was deleted from its file system, the same frames (read through
  map_files).
- Inside a container without CAP_SYS_PTRACE (podman's default), hangscan (the build directory
  bind-mounted; the image carries its libraries) refused by a process of another user gives one
  line saying so and the container's fix; `doctor` there says SYS_PTRACE is not held.

Needs podman, runc and mmdebstrap (tools/deps.sh test set), root; skipped with the reason
otherwise. The image is built once from Debian's mirror (~2 min) and its tarball cached under
/var/cache/hangscan-tests/, keyed by its package list; every container and the imported image
are removed at the end.
"""

import os
import re
import select
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import hs_testlib as lib

PROGRAM = lib.program_source("py_container.py")
# The image's Debian suite and packages, one line: also read by tools/fresh-machine.sh, which
# makes the root on the host (inside its new machine the cache is read-only, mmdebstrap cannot run).
SUITE, *PACKAGES = (Path(__file__).with_name("container-image.txt")).read_text().split()
CACHE = Path("/var/cache/hangscan-tests")
TARBALL = CACHE / (f"{SUITE}-essential-" + "-".join(PACKAGES).replace(".", "_") + ".tar")
LIBS = [p for p in PACKAGES if p != "python3"]


def marks():
    tag = re.compile("# " + "MARK " + r"([a-z_]+)\s*$")
    with open(PROGRAM) as fh:
        return {m.group(1): n for n, line in enumerate(fh, 1) if (m := tag.search(line))}


MARKS = marks()


def run(argv, timeout=120, check=True, **kw):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and out.returncode != 0:
        raise AssertionError(f"{argv} -> {out.returncode}\n{out.stderr[-2000:]}")
    return out


def image_tarball() -> Path:
    """The cached root tarball; built with mmdebstrap when absent (once per package list)."""
    if TARBALL.is_file():
        return TARBALL
    if TARBALL.is_dir():  # left by an earlier version of this test: not a tarball
        shutil.rmtree(TARBALL)
    CACHE.mkdir(parents=True, exist_ok=True)
    # mmdebstrap picks its output format by the name's extension: the temporary name ends in .tar.
    tmp = TARBALL.with_name(f"{TARBALL.stem}.tmp{os.getpid()}.tar")
    try:
        run(["mmdebstrap", "--variant=essential", "--include=" + ",".join(PACKAGES), SUITE,
             str(tmp)], timeout=900)
        tmp.rename(TARBALL)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp)
        tmp.unlink(missing_ok=True)
    return TARBALL


class Podman:
    """podman with this machine's settings (runc: cgroup v1 hybrid; no rlimit raising)."""

    def __init__(self, workdir: Path):
        conf = workdir / "containers.conf"
        conf.write_text("[containers]\ndefault_ulimits = []\n")
        self.env = dict(os.environ, CONTAINERS_CONF=str(conf))
        self.image = "localhost/hs-test:containers-%s" % uuid.uuid4().hex[:8]
        self.containers = []

    def __call__(self, *args, timeout=120, check=True):
        return run(["podman", *args], timeout=timeout, check=check, env=self.env)

    def start(self, name, *opts, fifo: Path, cmd=None):
        """Starts a container running py_container.py, waits for its "ready"; its host pid."""
        self.containers.append(name)
        self("run", "-d", "--runtime", "runc", "--name", name,
             "-v", f"{PROGRAM.parent}:/hs-programs:ro", "-v", f"{fifo.parent}:/hs-run",
             *opts, self.image,
             *(cmd or ["python3", "/hs-programs/py_container.py", "/hs-run/" + fifo.name]))
        wait_ready(fifo, 30.0)
        pid = int(self("inspect", "-f", "{{.State.Pid}}", name).stdout.strip())
        cid = self("inspect", "-f", "{{.Id}}", name).stdout.strip()
        # "ready" is written right before the sleep: wait until the thread sleeps in it.
        lib.wait_for(lambda: lib.thread_syscall(pid, pid) in ("230", "35"), 10.0,
                     "the container's python to sleep")
        return pid, cid

    def close(self):
        for name in self.containers:
            self("rm", "-f", "-t", "0", name, check=False)
        self("rmi", "-f", self.image, check=False)


def wait_ready(fifo: Path, timeout: float):
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        deadline = time.monotonic() + timeout
        data = b""
        while b"ready" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("the container did not say ready within %.0f s" % timeout)
            r, _, _ = select.select([fd], [], [], left)
            if r:
                data += os.read(fd, 64)
    finally:
        os.close(fd)


def make_fifo(d: Path, name: str) -> Path:
    fifo = d / name
    os.mkfifo(fifo, 0o666)
    os.chmod(fifo, 0o666)
    return fifo


def podman_session(prefix: str):
    """(Podman, its work directory) with the test image imported; skips where podman cannot
    run here. The caller closes the Podman and removes the directory (also when this skips)."""
    missing = [t for t in ("podman", "runc", "mmdebstrap") if not shutil.which(t)]
    if missing:
        pytest.skip("not installed: " + ", ".join(missing) + " (tools/deps.sh test)")
    if os.geteuid() != 0:
        pytest.skip("rootful podman needs root")
    tarball = image_tarball()
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(workdir, 0o755)
    return Podman(workdir), workdir, tarball


def probe_podman(pm, tarball):
    # Where this machine cannot run a container at all (a chroot whose root is no mount
    # point: podman cannot even unpack an image there; a nested sandbox), say so and skip:
    # that is the machine, not the code under test.
    for step in (["import", str(tarball), pm.image],
                 ["run", "--rm", "--runtime", "runc", pm.image, "true"]):
        probe = pm(*step, timeout=300, check=False)
        if probe.returncode != 0:
            last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
            pytest.skip(f"podman cannot {step[0]} here on this machine: {last}")


@pytest.fixture(scope="module")
def podman():
    pm, workdir, tarball = podman_session("hs-containers-")
    try:
        probe_podman(pm, tarball)
        yield pm, workdir
    finally:
        pm.close()
        shutil.rmtree(workdir, ignore_errors=True)


def python_triples(proc):
    main = next(t for t in proc["threads"] if t["tid"] == proc["pid"])
    return [[f["function"], f["file"], f["line"]] for f in main["frames"] if f["kind"] == "python"]


EXPECTED = [["park", "/hs-programs/py_container.py", MARKS["park"]],
            ["serve", "/hs-programs/py_container.py", MARKS["serve"]],
            ["<module>", "/hs-programs/py_container.py", MARKS["module"]]]


def test_host_dump_names_the_container(podman):
    pm, workdir = podman
    name = "hs-web_" + uuid.uuid4().hex[:6]
    pid, cid = pm.start(name, "-e", "RANK=3", "-e", "WORLD_SIZE=4",
                        fifo=make_fifo(workdir, "ready-host"))
    res = lib.dump(pid)
    assert res.rc == 0, res.describe()
    proc = lib.process_of(res.doc, pid)
    assert proc["container"] == {"runtime": "podman", "id": cid, "name": name, "pod_uid": ""}
    assert (proc["rank"], proc["world_size"]) == (3, 4)
    assert python_triples(proc) == EXPECTED
    text = lib.dump(pid, as_json=False)
    assert text.rc == 0, text.describe()
    assert f"  container podman:{name} (id {cid[:12]})" in text.stdout, text.stdout

    # The container's python binary deleted from its file system (an image replaced under a
    # running container): the mapping is still read, through map_files.
    # Never the host's own file: where the container's root is no file system of its own (seen
    # in a chroot whose root was bound onto itself), the same inode is the host's python.
    inside = pm("exec", name, "readlink", "-f", "/usr/bin/python3").stdout.strip()
    mine, host = Path(f"/proc/{pid}/root{inside}").stat(), Path(inside)
    if host.exists() and (host.stat().st_dev, host.stat().st_ino) == (mine.st_dev, mine.st_ino):
        pytest.skip("the container's python is the host's own file here: not deleting it")
    pm("exec", name, "rm", "-f", inside)
    with open(f"/proc/{pid}/maps") as f:
        assert "(deleted)" in f.read()
    again = lib.dump(pid)
    assert again.rc == 0, again.describe()
    assert python_triples(lib.process_of(again.doc, pid)) == EXPECTED
    lib.assert_runs_on(pid)


def test_inside_a_container_without_sys_ptrace(podman):
    pm, workdir = podman
    name = "hs-noptrace-" + uuid.uuid4().hex[:6]
    build = lib.build_dir()
    # The target runs as another user; hangscan, root of the container with podman's default
    # capabilities (no SYS_PTRACE), may not trace it.
    pid, cid = pm.start(name, "--user", "1000", "-v", f"{build}:/hs-build:ro",
                        fifo=make_fifo(workdir, "ready-noptrace"))
    # From the host, a process of no rank: the container is on the facts line under its title.
    host = lib.dump(pid, as_json=False)
    assert host.rc == 0, host.describe()
    assert (f"state S, Python 3.11.2, container podman:{name} (id {cid[:12]}), "
            in host.stdout), host.stdout
    hs = "/hs-build/" + Path(lib.hangscan_bin()).name
    out = pm("exec", "--user", "0", name, hs, "dump", "--pid", "1", check=False, timeout=60)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines[0] == ("hangscan: pid 1: permission denied: hangscan runs in a container "
                        "without CAP_SYS_PTRACE"), out.stderr
    assert lines[1] == (
        "hint: give hangscan's container CAP_SYS_PTRACE: start it with --cap-add SYS_PTRACE "
        "(docker, podman); in Kubernetes debug with 'kubectl debug --profile=general' or set "
        "securityContext.capabilities.add: [\"SYS_PTRACE\"]; where /proc/PID/mem is still "
        "readable, --nonblocking reads the Python stacks without ptrace"), out.stderr
    doc = pm("exec", "--user", "0", name, hs, "doctor", check=False, timeout=60)
    ptrace = [line for line in doc.stdout.splitlines() if line.startswith("WARN ptrace:")]
    assert ptrace == ["WARN ptrace: hangscan runs in a container without CAP_SYS_PTRACE (CapEff "
                      "of its own process): only processes of its own user can be traced fix: "
                      + lines[1][len("hint: "):]], doc.stdout
    lib.assert_runs_on(pid)
