"""Field truth (issue 32, item 7): real software from Debian packages, written without hangscan in
mind, made to hang from outside, and the verdict it gets.

None of these programs say "ready": each test waits (with a deadline) for the state it needs
to be visible in /proc -- a rank's loop running, a worker reading a FIFO, a thread blocked
writing a full pipe -- and only then dumps. Each asserts who the report names and that the
Python frames are there where Python runs.

  mpi4py's own ring benchmark (python3-mpi4py, Open MPI), one rank stopped with SIGSTOP
  compileall -j 3 (CPython's own tool, a ProcessPoolExecutor), one source file a FIFO nobody writes
  joblib.Parallel (python3-joblib, loky workers), one worker stopped with SIGSTOP
  memcached -vv (a threaded C server) logging into a pipe nobody reads
  python3 -m http.server (a threaded Python server), a client that never ends its request
"""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

import hs_testlib as hs

PY = "/usr/bin/python3"  # Debian's interpreter: the packages below are installed for it


def need(*names):
    """Skips unless every tool (on PATH) or Python module (for Debian's python3) is there."""
    for name in names:
        if name.startswith("mpirun") or name == "memcached":
            missing = shutil.which(name) is None
        else:
            missing = subprocess.run([PY, "-c", f"import {name}"], capture_output=True).returncode
        if missing:
            pytest.skip(f"{name} is not installed (tools/deps.sh test installs it)")


@pytest.fixture
def targets():
    with hs.TargetPool() as pool:
        yield pool


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for c in hs.children(todo.pop()):
            out.append(c)
            todo.append(c)
    return sorted(out)


def environ_of(pid):
    text = hs.read_text(f"/proc/{pid}/environ") or ""
    return dict(kv.split("=", 1) for kv in text.split("\0") if "=" in kv)


def rss_kib(pid):
    for line in (hs.read_text(f"/proc/{pid}/status") or "").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def sleeping_since(pid, tid, seconds):
    """True once thread tid has been asleep (S) with the same syscall line for `seconds`."""
    first = (hs.stat_state(f"/proc/{pid}/task/{tid}/stat"),
             hs.read_text(f"/proc/{pid}/task/{tid}/syscall"))
    if first[0] != "S":
        return False
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = (hs.stat_state(f"/proc/{pid}/task/{tid}/stat"),
               hs.read_text(f"/proc/{pid}/task/{tid}/syscall"))
        if now != first:
            return False
        time.sleep(0.02)
    return True


def python_functions(thread):
    return [f["function"] for f in thread.get("frames", []) if f.get("kind") == "python"]


def main_thread(proc):
    for t in proc["threads"]:
        if t.get("main") or t["tid"] == proc["pid"]:
            return t
    raise AssertionError(f"no main thread in {proc['pid']}")


def suspect_pids(doc):
    return sorted(m["pid"] for m in doc.get("suspect_members") or [])


# ---------------------------------------------------------------------------------------
# MPI: mpi4py's ring benchmark under Open MPI, rank 2 stopped

def test_mpi4py_ring_names_the_stopped_rank(targets):
    need("mpirun.openmpi", "mpi4py")
    world, odd = 4, 2
    job = targets.start(["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np",
                         str(world), PY, "-m", "mpi4py.bench", "ringtest", "-l", "2000000",
                         "-n", "1", "-q"], ready=None, main_parked=False)

    def ranks():
        found = {}
        for pid in descendants(job.pid):
            if hs.cmdline(pid)[:3] == [PY, "-m", "mpi4py.bench"]:
                rank = environ_of(pid).get("OMPI_COMM_WORLD_RANK")
                if rank is not None:
                    found[int(rank)] = pid
        return found if len(found) == world else None

    by_rank = hs.wait_for(ranks, 60, "4 mpi4py ranks")
    # The benchmark first builds a list of 2,000,000 iterations (~80 MB); past that it is in
    # the ring loop, which is where the stop must catch rank 2.
    hs.wait_for(lambda: all(rss_kib(p) > 80_000 for p in by_rank.values()), 60,
                "every rank to enter the ring loop")
    os.kill(by_rank[odd], signal.SIGSTOP)
    hs.wait_for(lambda: hs.process_state(by_rank[odd]) == "T", 10, "rank 2 to stop")
    run = hs.dump(job.pid, "--subprocesses")
    doc = run.doc
    assert run.rc == 0, run.describe()
    assert doc["suspects"] == [odd], doc["suspect_reasons"]
    assert doc["suspect_reasons"][0] == f"rank {odd} is stopped (state T)"
    assert suspect_pids(doc) == [by_rank[odd]]
    for rank, pid in by_rank.items():
        proc = hs.process_of(doc, pid)
        assert proc["rank"] == rank and proc["world_size"] == world
        names = python_functions(main_thread(proc))
        # Python frames on every rank: the benchmark's own functions, innermost first.
        assert names[:2] == ["ringtest.<locals>.ring", "ringtest"], (rank, names)
        ring = main_thread(proc)["frames"][0]
        assert ring["file"].endswith("mpi4py/bench.py")
    text = hs.run_hangscan(["dump", "--pid", str(job.pid), "--subprocesses"]).stdout
    assert [l for l in text.splitlines() if l.startswith("SUSPECT")] == [
        f"SUSPECT rank {odd} is stopped (state T)"]
    os.kill(by_rank[odd], signal.SIGCONT)


# ---------------------------------------------------------------------------------------
# Multi-process: CPython's compileall -j 3 (a ProcessPoolExecutor), one worker stopped while
# there is work left: the others finish it and go idle, the parent waits for the stopped one.

def test_compileall_pool_names_the_stopped_worker(targets, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    body = "".join(f"def f{j}(x):\n    return [x * {j} for _ in range(3)]\n" for j in range(1500))
    for i in range(40):
        (src / f"mod{i:02}.py").write_text(body)
    job = targets.start([PY, "-X", f"pycache_prefix={tmp_path / 'pyc'}", "-m", "compileall",
                         "-j", "3", "-q", str(src)], ready=None, main_parked=False)
    workers = hs.wait_for(lambda: hs.children(job.pid) if len(hs.children(job.pid)) == 3 else None,
                          60, "3 compileall workers")
    # Stopped while it compiles: running, with 100 ms of CPU behind it (past its start-up).
    victim = hs.wait_for(lambda: next((p for p in workers if hs.process_state(p) == "R"
                                       and hs.cpu_ticks(p, p) >= 10), None),
                         30, "a worker compiling")
    os.kill(victim, signal.SIGSTOP)
    # The others finish the work and sleep in the task loop, or (when the stopped worker held
    # no task) exit once the pool shuts down, while the parent waits to join the stopped one.
    hs.wait_for(lambda: sleeping_since(job.pid, job.pid, 0.5) and all(
        hs.process_state(p) in (None, "Z") or sleeping_since(p, p, 0.5)
        for p in workers if p != victim),
        60, "the parent and the other workers to sleep or end")
    run = hs.dump(job.pid, "--subprocesses")
    doc = run.doc
    assert run.rc in (0, 1), run.describe()  # 1: ended workers not reaped yet (zombies)
    assert suspect_pids(doc) == [victim], doc["suspect_reasons"]
    host = hs.process_of(doc, victim)["host"]
    assert doc["suspect_reasons"] == [f"process {host}:{victim} is stopped (state T)"]
    for pid in workers:
        if hs.process_state(pid) in (None, "Z"):
            continue
        names = python_functions(main_thread(hs.process_of(doc, pid)))
        assert "_process_worker" in names, (pid, names)   # Python frames in every live worker
    assert "main" in python_functions(main_thread(hs.process_of(doc, job.pid)))
    os.kill(victim, signal.SIGCONT)


# ---------------------------------------------------------------------------------------
# Multi-process: joblib.Parallel (loky workers), one worker stopped inside a task

def test_joblib_names_the_stopped_worker(targets, tmp_path):
    need("joblib")
    script = tmp_path / "jobs.py"
    script.write_text("from joblib import Parallel, delayed\nimport time\n"
                      "Parallel(n_jobs=3)(delayed(time.sleep)(0.2) for _ in range(30))\n")
    job = targets.start([PY, str(script)], ready=None, main_parked=False)

    def loky_workers():
        found = [p for p in hs.children(job.pid) if "popen_loky_posix" in " ".join(hs.cmdline(p))]
        return found if len(found) == 3 else None

    workers = hs.wait_for(loky_workers, 60, "3 loky workers")
    victim = hs.wait_for(lambda: next((p for p in workers if hs.thread_syscall(p, p) == "230"),
                                      None), 30, "a worker sleeping inside a task")
    os.kill(victim, signal.SIGSTOP)
    others = [p for p in workers if p != victim]
    hs.wait_for(lambda: all(sleeping_since(p, p, 0.6) for p in others), 60,
                "the other workers to run out of tasks")
    run = hs.dump(job.pid, "--subprocesses")
    doc = run.doc
    assert run.rc == 0, run.describe()
    assert suspect_pids(doc) == [victim], doc["suspect_reasons"]
    assert doc["suspect_reasons"][0].endswith("is stopped (state T)"), doc["suspect_reasons"]
    for pid in workers:
        names = python_functions(main_thread(hs.process_of(doc, pid)))
        assert names, f"no Python frames in worker {pid}"
    os.kill(victim, signal.SIGCONT)


# ---------------------------------------------------------------------------------------
# A threaded C server: memcached -vv logs every command to stderr; here a pipe nobody reads.

def test_memcached_worker_blocked_on_a_full_log_pipe_waits_on_its_reader(targets):
    need("memcached")
    memcached = shutil.which("memcached")
    read_end, write_end = os.pipe()  # this test holds the read end and never reads it
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proc = subprocess.Popen([memcached, "-vv", "-u", "root", "-l", "127.0.0.1", "-p",
                                 str(port), "-U", "0", "-t", "2"], stdin=subprocess.DEVNULL,
                                stdout=write_end, stderr=write_end, start_new_session=True)
        targets.targets.append(hs.Target([memcached], proc, os.devnull))
        os.close(write_end)
        write_end = None
        client = hs.wait_for(lambda: _connect(port), 20, "memcached to listen")
        with client:
            client.setblocking(False)
            worker = None
            deadline = time.monotonic() + 30
            while worker is None and time.monotonic() < deadline:
                try:
                    client.send(b"get key\r\n" * 64)
                    client.recv(1 << 16)
                except BlockingIOError:
                    pass
                for tid in hs.tids(proc.pid):
                    if (hs.thread_syscall(proc.pid, tid) == "1"   # write(2) into the log pipe
                            and sleeping_since(proc.pid, tid, 0.3)):
                        worker = tid
            assert worker is not None, "no memcached thread blocked writing its log"
            run = hs.dump(proc.pid)
    finally:
        os.close(read_end)
        if write_end is not None:
            os.close(write_end)
    assert run.rc == 0, run.describe()
    thread = hs.thread_by_tid(hs.process_of(run.doc, proc.pid), worker)
    assert thread["name"] == "mc-worker"
    assert "__fprintf_chk" in hs.function_names(thread["frames"]), hs.format_stack(thread)
    # The read end is held by this test's process, outside the report: named, not "nobody".
    assert [e.get("pid") for e in thread["waits_on"]] == [os.getpid()], thread["waits_on"]


def _connect(port):
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=1)
    except OSError:
        return None


# ---------------------------------------------------------------------------------------
# A threaded Python server: http.server; a client sends half a request and waits.

def test_http_server_handler_thread_waits_on_its_client(targets):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = targets.start([PY, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                           ready=None, main_parked=False, cwd="/")
    client = hs.wait_for(lambda: _connect(port), 20, "http.server to listen")
    with client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")   # no blank line: the request never ends
        handler = hs.wait_for(
            lambda: next((t for t in hs.tids(server.pid) if t != server.pid
                          and hs.thread_syscall(server.pid, t) == "45"     # recvfrom(2)
                          and sleeping_since(server.pid, t, 0.3)), None),
            20, "a handler thread to wait for the rest of the request")
        run = hs.dump(server.pid)
        assert run.rc == 0, run.describe()
        thread = hs.thread_by_tid(hs.process_of(run.doc, server.pid), handler)
        names = python_functions(thread)
        assert names[0] == "SocketIO.readinto", names
        assert "BaseHTTPRequestHandler.handle_one_request" in names, names
        assert [e.get("pid") for e in thread["waits_on"]] == [os.getpid()], thread["waits_on"]
        main = main_thread(hs.process_of(run.doc, server.pid))
        assert "BaseServer.serve_forever" in python_functions(main)
