"""`make dist`'s tarball (tools/dist.sh) on releases that have none of hangscan's libraries.

The tarball is made from this build, unpacked into minimal roots of Debian 11 (glibc 2.31,
Python 3.9) and Debian 13 (glibc 2.41, Python 3.13) that hold python3 and nothing of hangscan's
(no libdw, libunwind, libbpf, fmt, boost), and run there in a chroot (/proc, /sys and /dev bound
in a private mount namespace that ends with the command): `--version`, `doctor` (ptrace and
eBPF ready), the loader's own list of what the binary loads (everything from the tarball's
lib/, nothing from the root), a `dump` of a Python process of that root with its exact
Python frames, `watch` of it recording with eBPF (not the ptrace fallback), and `core` of a
kernel core that root's python3 left (a ctypes NULL dereference; core_pattern is set under ctest's
RESOURCE_LOCK core_pattern and restored). `make wheel`'s
wheel (tools/wheel.py) pip-installed from its file into a venv of the Debian 11 root, and a dump
through the venv's `hangscan`. On the host, the tarball's launcher as the default pdsh agent
(the fan-out's agent is the launcher, not the bundled loader /proc/self/exe names), and the
3-node Slurm test cluster's ring job with the tarball as front end and --agent-path.

Needs root (chroot, mount) and mmdebstrap for the roots: each is made once from Debian's
mirror (~20 s) and its tarball cached under /var/cache/hangscan-tests; skipped with the
reason otherwise. Every root is removed at the end.
"""

import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import core_testlib as ct
import hs_testlib as lib

PROGRAM = lib.program_source("py_container.py")
CRASH = "py_ctypes_crash.py"
CACHE = Path("/var/cache/hangscan-tests")  # tools/fresh-machine.sh makes the same roots
PROPAGATION: list = []  # propagation(), found once
# suite -> (glibc version, the root's python package, whether that Python says its full version:
# Py_Version exists from 3.11 on; before, hangscan names the minor version only)
RELEASES = {"bullseye": ("2.31", "python3.9", False), "trixie": ("2.41", "python3.13", True)}
LIBC = {"bullseye": "libc-2.31.so", "trixie": "libc.so.6"}  # the file name libc's mapping has
# What each root holds besides the essential set (python3-venv: the wheel is pip-installed there).
PACKAGES = {"bullseye": "python3,python3-venv", "trixie": "python3"}
HS_LIBS = ["libdw.so.1", "libelf.so.1", "libunwind.so.8", "libbpf.so.1", "libfmt.so.9",
           "libboost_filesystem.so.1.74.0"]


def marks():
    found = {}
    for n, line in enumerate(PROGRAM.read_text().splitlines(), 1):
        if "# MARK " in line:
            found[line.rsplit("# MARK ", 1)[1].strip()] = n
    return found


MARKS = marks()
EXPECTED = [["park", "/hs/py_container.py", MARKS["park"]],
            ["serve", "/hs/py_container.py", MARKS["serve"]],
            ["<module>", "/hs/py_container.py", MARKS["module"]]]


def skip(reason: str):
    """Skip, except in the fresh-machine check (HS_DIST_REQUIRED=1, set where it binds the roots
    in): there the tarball's tests must run, so what would skip them fails."""
    if os.environ.get("HS_DIST_REQUIRED") == "1":
        pytest.fail(f"would skip, but the fresh-machine check requires this test: {reason}")
    pytest.skip(reason)


def run(argv, timeout=120, **kw):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    assert out.returncode == 0, f"{argv} -> {out.returncode}\n{out.stderr[-2000:]}"
    return out


def root_tarball(suite: str) -> Path:
    """The cached root of SUITE (essential + PACKAGES); made with mmdebstrap when absent."""
    tarball = CACHE / f"{suite}-essential-{PACKAGES[suite].replace(',', '-')}.tar"
    if tarball.is_file():
        return tarball
    if not shutil.which("mmdebstrap"):
        skip(f"no cached {tarball} and mmdebstrap is not installed (tools/deps.sh test)")
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = tarball.with_name(f"{tarball.stem}.tmp{os.getpid()}.tar")  # .tar: mmdebstrap's format
    try:
        made = subprocess.run(["mmdebstrap", "--variant=essential", f"--include={PACKAGES[suite]}", suite,
                               str(tmp)], capture_output=True, text=True, timeout=900)
        if made.returncode != 0:
            last = (made.stderr.strip().splitlines() or ["no message"])[-1]
            skip(f"mmdebstrap cannot make a {suite} root from this machine's mirror: {last}")
        tmp.rename(tarball)
    finally:
        tmp.unlink(missing_ok=True)
    return tarball


@pytest.fixture(scope="module")
def dist():
    """The tarball of this build, made by tools/dist.sh into a temporary directory."""
    out = Path(tempfile.mkdtemp(prefix="hs-dist-"))
    try:
        made = run([str(lib.source_dir() / "tools" / "dist.sh"), str(lib.build_dir()), str(out)])
        tarball = Path(made.stdout.strip().splitlines()[-1])
        version = run([lib.hangscan_bin(), "--version"]).stdout.split()[1]
        assert tarball == out / f"hangscan-{version}-x86_64-linux.tar.gz"
        wheel = run([str(lib.source_dir() / "tools" / "wheel.py"), str(tarball), str(out)])
        assert wheel.stdout.strip() == str(out / f"hangscan-{version}-py3-none-manylinux_2_17_x86_64.whl")
        yield tarball, version
    finally:
        shutil.rmtree(out, ignore_errors=True)


def propagation() -> str | None:
    """How `unshare --mount` may start here so that the binds below stay in its namespace:
    'private' on a machine; in a chroot whose / is not a mount point (the fresh-machine check)
    that is refused, and 'unchanged' is as safe where no mount is shared (the check's phase runs
    in a private namespace); None when neither holds."""
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                           capture_output=True, text=True, timeout=10)
    if probe.returncode == 0:
        return "private"
    shared = subprocess.run(["unshare", "--mount", "--propagation", "unchanged", "grep", "-c",
                             " shared:", "/proc/self/mountinfo"], capture_output=True, text=True,
                            timeout=10)
    return "unchanged" if shared.stdout.strip() == "0" else None


def in_root(root: Path) -> list[str]:
    """argv prefix: run in ROOT (chroot) with /proc, /sys, /dev bound in a mount namespace of
    its own; the mounts end with the process."""
    script = ('for d in proc sys dev; do mount --rbind "/$d" "$0/$d" || exit 70; done; '
              'exec chroot "$0" "$@"')
    return ["unshare", "-m", "--propagation", PROPAGATION[0], "--", "sh", "-c", script, str(root)]


@contextlib.contextmanager
def unpacked_root(suite: str, dist):
    """SUITE's root in a temporary directory with the tarball in /opt and the target program
    and the wheel in /hs; removed at the end."""
    if os.geteuid() != 0:
        skip("chroot and mount need root")
    if not PROPAGATION:
        PROPAGATION.append(propagation())
    if PROPAGATION[0] is None:
        skip("no mount namespace whose binds stay its own (/ is not a mount point and "
                    "some mount is shared)")
    tarball = root_tarball(suite)
    root = Path(tempfile.mkdtemp(prefix=f"hs-dist-{suite}-"))
    try:
        run(["tar", "-C", str(root), "-xf", str(tarball)])
        run(["tar", "-C", str(root / "opt"), "-xzf", str(dist[0])])
        (root / "hs").mkdir()
        shutil.copy(PROGRAM, root / "hs" / PROGRAM.name)
        for wheel in dist[0].parent.glob("*.whl"):
            shutil.copy(wheel, root / "hs" / wheel.name)
        yield root, f"/opt/hangscan-{dist[1]}"
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(root)])


@pytest.fixture(scope="module", params=sorted(RELEASES))
def release(request, dist):
    with unpacked_root(request.param, dist) as (root, top):
        yield request.param, root, top


def dpkg_version(root: Path, package: str) -> str:
    stanzas = (root / "var/lib/dpkg/status").read_text().split("\n\n")
    for s in stanzas:
        fields = dict(line.split(": ", 1) for line in s.splitlines() if ": " in line)
        if fields.get("Package") == package and "installed" in fields.get("Status", ""):
            return fields["Version"]
    raise AssertionError(f"{package} is not installed in {root}")


def wait_ready(fifo: Path, timeout: float):
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        end, data = time.monotonic() + timeout, b""
        while b"ready" not in data:
            left = end - time.monotonic()
            assert left > 0, f"no 'ready' on {fifo} within {timeout} s"
            if select.select([fd], [], [], left)[0]:
                data += os.read(fd, 64)
    finally:
        os.close(fd)


def start_python(pool, root: Path, prefix: list[str], fifo_name: str):
    """py_container.py run by the root's own python3 (or the host's when prefix is empty)."""
    fifo = root / "hs" / fifo_name
    os.mkfifo(fifo, 0o600)
    inner = "/hs" if prefix else str(root / "hs")
    target = pool.start(prefix + ["python3", f"{inner}/py_container.py", f"{inner}/{fifo_name}"],
                        ready=None, main_parked=False)
    wait_ready(fifo, 30.0)
    lib.wait_for(lambda: lib.thread_syscall(target.pid, target.pid) in ("230", "35", "23"), 10.0,
                 "the python to sleep")
    return target


def python_triples(proc):
    main = next(t for t in proc["threads"] if t["tid"] == proc["pid"])
    return [[f["function"], f["file"], f["line"]] for f in main["frames"] if f["kind"] == "python"]


def test_tarball_runs_on_another_release(release, dist):
    suite, root, top = release
    glibc, package, full = RELEASES[suite]
    python = dpkg_version(root, package).split("-")[0] if full else package[len("python"):]
    assert dpkg_version(root, "libc6").startswith(glibc + "-")
    for name in HS_LIBS:  # the root has none of hangscan's libraries: all come from the tarball
        assert not (root / "usr/lib/x86_64-linux-gnu" / name).exists(), name
    chroot = in_root(root)
    hs = top + "/bin/hangscan"

    version = lib.run_hangscan(["--version"], prefix=chroot, binary=hs)
    assert version.rc == 0, version.describe()
    assert version.stdout == run([lib.hangscan_bin(), "--version"]).stdout

    # What the bundled loader loads for the binary: every library from the tarball's lib/.
    listed = run(chroot + [top + "/lib/ld-linux-x86-64.so.2", "--library-path", top + "/lib",
                           "--list", top + "/libexec/hangscan"]).stdout
    paths = [line.split("=> ")[1].split(" (")[0] for line in listed.splitlines() if "=> " in line]
    assert paths and all(p.startswith(top + "/lib/") for p in paths), listed

    doctor = lib.run_hangscan(["doctor"], prefix=chroot, binary=hs)
    assert doctor.rc == 0, doctor.describe()
    for check in ("ptrace", "ebpf"):
        assert [l for l in doctor.stdout.splitlines() if l.startswith(f"ok   {check}: ")], doctor.stdout

    with lib.TargetPool() as pool:
        target = start_python(pool, root, chroot, "ready")
        res = lib.run_hangscan(["dump", "--pid", str(target.pid), "--json"], prefix=chroot, binary=hs)
        assert res.rc == 0, res.describe()
        proc = lib.process_of(res.doc, target.pid)
        assert python_triples(proc) == EXPECTED
        text = lib.run_hangscan(["dump", "--pid", str(target.pid)], prefix=chroot, binary=hs)
        assert f"Python {python}," in text.stdout, text.stdout
        # The eBPF recorder (CO-RE object inside the binary, libbpf from lib/), not the fallback.
        watch = lib.run_hangscan(["watch", "--pid", str(target.pid), "--for", "1", "--json"],
                                 prefix=chroot, binary=hs)
        assert watch.rc == 0, watch.describe()
        assert watch.doc["recorder"] == "ebpf"
        assert [p["pid"] for p in watch.doc["processes"]] == [target.pid]
        lib.assert_runs_on(target.pid)


class CoresInRoot(ct.CoreDir):
    """Kernel cores of processes chrooted into ROOT: the kernel opens core_pattern's path in
    the crashing process's own root, so the pattern's directory is made inside ROOT too."""

    def __init__(self, root: Path):
        super().__init__()
        self.inner = self.path.relative_to("/")
        (root / self.inner).mkdir(parents=True)
        self.root = root

    def core_of(self, pid: int) -> Path:
        return self.root / self.inner / f"core.{pid}"


def test_core_of_a_crash_in_the_root(release):
    """A ctypes NULL dereference by the root's own python3, its kernel core read in the root by
    the tarball's binary: the signal, the crashed thread, its exact Python frames, the rank."""
    suite, root, top = release
    shutil.copy(lib.program_source(CRASH), root / "hs" / CRASH)
    chroot = in_root(root)
    with CoresInRoot(root) as cores:
        core, pid = cores.crash(chroot + ["python3", f"/hs/{CRASH}", "1"], signal.SIGSEGV,
                                env={"RANK": "2", "WORLD_SIZE": "4"})
    try:
        res = lib.run_hangscan(["core", "/" + str(core.relative_to(root)), "--json"], prefix=chroot,
                               binary=top + "/bin/hangscan")
        assert res.rc == 0, res.describe()
        p = ct.only_process(res.doc)
        assert (p["pid"], p["rank"], p["world_size"]) == (pid, 2, 4)
        assert p["signal"] == {"number": 11, "name": "SIGSEGV", "address": "0x0", "code": 1}
        t = ct.crashed_thread(p)
        assert t["tid"] == pid
        script = f"/hs/{CRASH}"
        assert ct.python_frames(t) == [("read_header", script, lib.hs_line(CRASH, "memmove")),
                                       ("load_record", script, lib.hs_line(CRASH, "load_record")),
                                       ("<module>", script, lib.hs_line(CRASH, "main"))]
        # The root has no debug info: the fault site is libc's unnamed memmove variant and the
        # call came through libffi and _ctypes, known by their modules.
        fault = t["frames"][0]
        libc = fault["module"].rsplit("/", 1)[1]
        assert (fault["function"], libc) == ("??", LIBC[suite]), fault
        assert p["annotations"] == [
            f"SIGSEGV at address 0x0: a null pointer dereference in {fault['pc']} ({libc})",
            "the native code was called from Python through ctypes, by read_header "
            f"({CRASH}:{lib.hs_line(CRASH, 'memmove')})"]
    finally:
        core.unlink()


def test_launcher_is_the_default_pdsh_agent(dist):
    """Started through the launcher, /proc/self/exe is the bundled loader: the default agent
    must still be the launcher, so `pdsh` from the tarball reaches its targets; `doctor
    --agent-path` accepts the launcher."""
    if not shutil.which("pdsh"):
        skip("pdsh is not installed (tools/deps.sh test)")
    host = Path(tempfile.mkdtemp(prefix="hs-dist-host-"))
    os.chmod(host, 0o755)
    try:
        run(["tar", "-C", str(host), "-xzf", str(dist[0])])
        (host / "hs").mkdir()
        shutil.copy(PROGRAM, host / "hs" / PROGRAM.name)
        hs = str(host / f"hangscan-{dist[1]}" / "bin" / "hangscan")
        doctor = lib.run_hangscan(["doctor", "--agent-path", hs], binary=hs)
        assert [l for l in doctor.stdout.splitlines() if l.startswith("ok   agent: ")], doctor.stdout
        with lib.TargetPool() as pool:
            target = start_python(pool, host, [], "ready-pdsh")
            res = lib.run_hangscan(["pdsh", "-R", "exec", "-w", "n1", "--match",
                                    f"{host}/hs/ready-pdsh", "--json", "--timeout", "60"], binary=hs)
            assert res.rc == 0, res.describe()
            proc = lib.process_of(res.doc, target.pid)
            assert proc["host"] == "n1"
            assert python_triples(proc) == [[f, str(host) + p, n] for f, p, n in EXPECTED]
    finally:
        shutil.rmtree(host, ignore_errors=True)


def test_slurm_job_with_the_tarball_as_agent(dist):
    """The 3-node Slurm cluster (tests/fanout/cluster.sh) and its 6-rank ring job with rank 3
    stopped elsewhere: the tarball, unpacked in a directory every node sees (the shared file
    system), is the front end and the agent (--agent-path) of `hangscan --slurm-job`."""
    if os.geteuid() != 0 or not shutil.which("slurmctld"):
        skip("the Slurm test cluster needs root and slurmctld (tools/deps.sh test)")
    import test_slurm as ts  # its cluster helpers and the exact checks of the ring report

    shared = Path(tempfile.mkdtemp(prefix="hs-dist-shared-"))
    os.chmod(shared, 0o755)
    try:
        run(["tar", "-C", str(shared), "-xzf", str(dist[0])])
        hs = str(shared / f"hangscan-{dist[1]}" / "bin" / "hangscan")
        with ts.SlurmCluster() as cluster, ts.RingJob(cluster, nodes=3, per_node=2, odd=ts.ODD) as job:
            res = lib.run_hangscan(["--slurm-job", job.job_id, "--agent-path", hs, "--json",
                                    "--timeout", "60"], env=cluster.env, binary=hs, timeout=120)
            assert res.rc == 0, res.describe()
            ts.check_ring_report(res.doc, job)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_wheel_in_a_venv_of_debian_11(dist):
    """`pip install` of the wheel file (no index) into a venv of the Debian 11 root, then a dump
    there through the venv's `hangscan`."""
    with unpacked_root("bullseye", dist) as (root, _), lib.TargetPool() as pool:
        chroot = in_root(root)
        wheel = next(root.glob("hs/*.whl")).name
        run(chroot + ["python3", "-m", "venv", "/venv"])
        run(chroot + ["/venv/bin/pip", "install", "-q", "--no-index", f"/hs/{wheel}"], timeout=300)
        version = lib.run_hangscan(["--version"], prefix=chroot, binary="/venv/bin/hangscan")
        assert version.rc == 0, version.describe()
        assert version.stdout == run([lib.hangscan_bin(), "--version"]).stdout
        target = start_python(pool, root, chroot, "ready-wheel")
        res = lib.run_hangscan(["dump", "--pid", str(target.pid), "--json"], prefix=chroot,
                               binary="/venv/bin/hangscan")
        assert res.rc == 0, res.describe()
        assert python_triples(lib.process_of(res.doc, target.pid)) == EXPECTED
