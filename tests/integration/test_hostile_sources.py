"""Source files a target names are read as the target could (issue 36, "Source files are read
as the target's owner could").

A Python process of `nobody` (tests/programs/py_named_source.py) runs code it compiled under a
file name of the test's choosing and blocks at line 5 of it. Root's `hangscan dump` may show
line 5 of that file as the running code only when `nobody` may read the file, it is a regular
file, and it did not change after the process started. Otherwise the frame keeps its line
number, `source` is null, and one process diagnostic (severity info) says why. A FIFO or
/dev/zero as the name never hangs the dump nor grows it.

The same holds for the files of a process's mappings, which hangscan opens as itself: a name
that leads elsewhere than the mapped file (here a FIFO mounted over the executable in the
target's own mount namespace) is not opened; the mapped file itself is read instead.
"""

import os
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

import hs_testlib as hs

PYTHON = "/usr/bin/python3.11"
PROGRAM = "py_named_source.py"
SECRET = "hs_secret_text = 'only root may read this line'"
HIDDEN = "only root may read"


@pytest.fixture
def files():
    """A 0755 directory: secret.py (root, 0600, SECRET on line 5) and public.py (0644)."""
    with tempfile.TemporaryDirectory(prefix="hs-sources-") as d:
        os.chmod(d, 0o755)
        for name, mode in (("secret.py", 0o600), ("public.py", 0o644)):
            path = os.path.join(d, name)
            with open(path, "w") as fh:
                fh.write("\n\n\n\n" + (SECRET if name == "secret.py" else "park(READY)") + "\n")
            os.chmod(path, mode)
        yield d


def start(targets, name, uid=hs.NOBODY, cwd=None):
    if not os.path.exists(PYTHON):
        pytest.skip(f"{PYTHON} is not installed")
    script = targets.public_copy(str(hs.program_source(PROGRAM)))
    return targets.start([PYTHON, script, hs.READY, name], uid=uid, cwd=cwd)


def dump_frame(target, name, *extra, timeout=30.0):
    """The JSON dump, the frame that runs line 5 of `name`, and the process's diagnostics."""
    run = hs.dump(target.pid, *extra, timeout=timeout)
    assert run.rc == 0, run.describe()
    proc = hs.process_of(run.doc, target.pid)
    frames = [f for t in proc["threads"] for f in t["frames"] if f.get("file") == name]
    assert len(frames) == 1, run.describe()
    assert frames[0]["line"] == 5 and frames[0]["column"] == 0, frames[0]
    return run, frames[0], proc["diagnostics"]


def withheld(diagnostics, name):
    found = [d for d in diagnostics if d["message"].startswith(f"source file {name}: ")]
    assert len(found) == 1, diagnostics
    assert found[0]["severity"] == "info" and found[0]["message"].endswith(
        "; its text is not shown"), found[0]
    return found[0]["message"]


def test_readable_source_is_shown(targets, files):
    name = os.path.join(files, "public.py")
    target = start(targets, name)
    _, frame, diags = dump_frame(target, name)
    assert frame["source"] == "park(READY)"
    assert not [d for d in diags if d["message"].startswith("source file")], diags


def test_root_only_file_is_not_shown(targets, files):
    name = os.path.join(files, "secret.py")
    target = start(targets, name)
    run, frame, diags = dump_frame(target, name)
    assert frame["source"] is None
    assert HIDDEN not in run.stdout
    assert withheld(diags, name) == (f"source file {name}: the process's user (uid 65534) may "
                                     "not read it; its text is not shown")
    text = hs.dump(target.pid, as_json=False)
    assert text.rc == 0, text.describe()
    assert HIDDEN not in text.stdout
    assert f"info: source file {name}: the process's user (uid 65534)" in text.stdout


def test_relative_names_resolve_in_the_working_directory(targets, files):
    sub = os.path.join(files, "sub")
    os.mkdir(sub)
    os.chmod(sub, 0o755)
    readable = start(targets, "../public.py", cwd=sub)
    assert dump_frame(readable, "../public.py")[1]["source"] == "park(READY)"
    secret = start(targets, "../secret.py", cwd=sub)
    run, frame, diags = dump_frame(secret, "../secret.py")
    assert frame["source"] is None and HIDDEN not in run.stdout
    assert "the process's user (uid 65534) may not read it" in withheld(diags, "../secret.py")


def test_symlink_to_root_only_file_is_not_shown(targets, files):
    name = os.path.join(files, "link.py")
    os.symlink(os.path.join(files, "secret.py"), name)
    target = start(targets, name)
    run, frame, diags = dump_frame(target, name)
    assert frame["source"] is None and HIDDEN not in run.stdout
    assert "the process's user (uid 65534) may not read it" in withheld(diags, name)


def test_fifo_does_not_hang_the_dump(targets, files):
    name = os.path.join(files, "fifo.py")
    os.mkfifo(name, 0o666)
    os.chmod(name, 0o666)
    target = start(targets, name)
    run, frame, diags = dump_frame(target, name, timeout=20.0)
    assert frame["source"] is None
    assert withheld(diags, name) == (f"source file {name}: it is not a regular file; its text "
                                     "is not shown")
    assert run.seconds < 10, run.describe()


def test_dev_zero_is_not_read(targets, files):
    target = start(targets, "/dev/zero")
    rss = os.path.join(files, "rss")
    # GNU time reports hangscan's peak RSS; the address-space limit keeps a regression from
    # taking the machine's memory with it.
    run = hs.dump(target.pid, timeout=20.0,
                  prefix=["prlimit", f"--as={2 << 30}", "--", "/usr/bin/time", "-o", rss,
                          "-f", "%M"])
    assert run.rc == 0, run.describe()
    proc = hs.process_of(run.doc, target.pid)
    frames = [f for t in proc["threads"] for f in t["frames"] if f.get("file") == "/dev/zero"]
    assert len(frames) == 1 and frames[0]["source"] is None, run.describe()
    assert "it is not a regular file" in withheld(proc["diagnostics"], "/dev/zero")
    peak_kb = int(open(rss).read().split()[-1])
    assert peak_kb < 100 * 1024, f"hangscan peaked at {peak_kb} KiB"


def test_file_changed_after_start_is_not_shown(targets, files):
    name = os.path.join(files, "public.py")
    target = start(targets, name)
    # The edit must come measurably after the start (its tick in /proc/PID/stat).
    ticks = int(hs.read_text(f"/proc/{target.pid}/stat").rsplit(")", 1)[1].split()[19])
    started = ticks / os.sysconf("SC_CLK_TCK")
    hs.wait_for(lambda: time.clock_gettime(time.CLOCK_BOOTTIME) > started + 0.1, 5,
                "the clock to pass the process start")
    with open(name, "w") as fh:
        fh.write("\n\n\n\nnew_code_line = 5\n")
    run, frame, diags = dump_frame(target, name)
    assert frame["source"] is None and "new_code_line" not in run.stdout
    assert withheld(diags, name) == (f"source file {name}: it changed after the process "
                                     "started; its text is not shown")


def test_root_process_shows_its_own_root_only_source(targets, files):
    name = os.path.join(files, "secret.py")
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o600
    target = start(targets, name, uid=None)
    _, frame, diags = dump_frame(target, name)
    assert frame["source"] == SECRET
    assert not [d for d in diags if d["message"].startswith("source file")], diags


def test_mapped_file_covered_by_a_fifo(targets, files):
    # A private mount namespace needs a root that is a mount point (not so in a chroot).
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                           capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        pytest.skip("no private mount namespace on this machine: " + probe.stderr.strip())
    exe = os.path.join(files, "deadlock")
    shutil.copy2(hs.program("deadlock"), exe)
    target = targets.start(["unshare", "--mount", "--propagation", "private", exe, hs.READY])
    fifo = os.path.join(files, "fifo")
    os.mkfifo(fifo, 0o600)
    # In the target's namespace only (it goes with the target): its executable's name now
    # leads to the FIFO, whose open for reading would wait for a writer for ever.
    subprocess.run(["nsenter", "-t", str(target.pid), "-m", "mount", "--bind", fifo, exe],
                   check=True, timeout=10)
    try:
        run = hs.dump(target.pid, timeout=20.0)
        assert run.rc == 0, run.describe()
        proc = hs.process_of(run.doc, target.pid)
        names = hs.function_names(hs.frames_of(hs.thread_named(proc, "hs-lock-a")))
        assert "lock_second" in names and "thread_a_main" in names, run.describe()
    finally:
        target.kill()


@pytest.mark.parametrize("uid", [hs.NOBODY, None], ids=["nobody", "root"])
def test_core_source_is_read_as_the_cores_user(targets, files, uid):
    """A core names its user (NT_PRPSINFO): its source files are read as that user could."""
    name = os.path.join(files, "secret.py")
    target = start(targets, name, uid=uid)
    outdir = os.path.join(files, "cores")
    os.mkdir(outdir)
    made = hs.run_hangscan(["gcore", "--pid", target.pid, "-o", outdir, "--json"], timeout=60)
    assert made.rc == 0 and made.doc, made.describe()
    run = hs.run_hangscan(["core", made.doc["path"], "--json"], timeout=60)
    assert run.doc, run.describe()
    proc = run.doc["processes"][0]
    frames = [f for t in proc["threads"] for f in t["frames"] if f.get("file") == name]
    assert len(frames) == 1 and frames[0]["line"] == 5, run.describe()
    if uid is None:
        assert frames[0]["source"] == SECRET
        return
    assert frames[0]["source"] is None and HIDDEN not in run.stdout
    assert "the process's user (uid 65534) may not read it" in withheld(proc["diagnostics"], name)


def chain_target(targets, directory, depth):
    """A process of `nobody` blocked at the end of a call chain through `depth` source files."""
    os.chmod(directory, 0o755)
    for i in range(depth):
        body = (f"import m{i + 1}\ndef f(fd): m{i + 1}.f(fd)\n" if i + 1 < depth else
                "import os\ndef f(fd):\n    r, w = os.pipe(); os.write(fd, b'ready\\n'); os.close(fd); os.read(r, 1)\n")
        with open(os.path.join(directory, f"m{i}.py"), "w") as fh:
            fh.write(body)
    code = f"import sys; sys.path.insert(0, {directory!r}); import m0; m0.f(int(sys.argv[1]))"
    return targets.start([PYTHON, "-c", code, hs.READY], uid=hs.NOBODY, ready_at=3)


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_source_files_of_one_process_are_read_on_one_thread(targets, tmp_path):
    # Each file a dump shows is read on the reader's one thread: a dump of 4 source files
    # starts as many threads as one of a single file.
    started = {}
    for depth in (1, 4):
        with tempfile.TemporaryDirectory(prefix="hs-chain-") as directory:
            target = chain_target(targets, directory, depth)
            log = tmp_path / f"strace{depth}.txt"
            run = hs.dump(target.pid, prefix=["strace", "-f", "-qq", "-e", "trace=clone,clone3", "-o", str(log)])
            assert run.rc == 0, run.describe()
            shown = {f["file"] for t in hs.process_of(run.doc, target.pid)["threads"] for f in t["frames"]
                     if f.get("source") is not None and f["file"].startswith(directory)}
            assert len(shown) == depth, run.describe()
            started[depth] = sum(1 for line in log.read_text().splitlines() if " clone" in line)
            target.kill()
    assert started[4] == started[1], started
