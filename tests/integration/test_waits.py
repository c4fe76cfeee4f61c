"""Who waits on whom: real rings of ranks over TCP, unix sockets and gloo, examined by
`hangscan dump`, each edge checked against `ss` (iproute2 reads the kernel's socket tables
through its own netlink code) and the kernel's fd links.

Why: the wait chain names the rank to look at even when every stack looks alike (each rank of
a ring blocks in the same recv). A wrong edge would send an operator to the wrong rank, so
every edge is asserted exactly: its peer pid and rank, and its addresses.
"""

import importlib.util
import os
import re
import socket
import subprocess
import sys

import pytest

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "programs"))

PYTHON = "/usr/bin/python3"
TCP_RING = str(hs.program_source("tcp_ring.py"))
RING = str(hs.program_source("ring_allreduce.py"))
GLOO = str(hs.program_source("hang_gloo.py"))


def dump_job(pid, *extra):
    run = hs.dump(pid, "--subprocesses", *extra)
    assert run.rc in (0, 1) and run.doc, run.describe()
    return run.doc


def ranks_of(doc):
    return {p["rank"]: p for p in doc["processes"] if p["role"] == "rank"}


def main_thread(proc):
    return next(t for t in proc["threads"] if t["tid"] == proc["pid"])


def ss_tcp():
    """(local, remote) -> pid of every established TCP socket with its owner, from `ss`."""
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for line in out.splitlines():
        f = line.split()
        m = re.search(r"pid=(\d+)", line)
        if len(f) >= 4 and m:
            table[(f[2], f[3])] = int(m.group(1))
    return table


def ss_peer_edge(table, pid, peer_pid):
    """The connection of `pid` whose other end `peer_pid` holds, as hangscan's via."""
    found = [(l, r) for (l, r), p in table.items() if p == pid and table.get((r, l)) == peer_pid]
    assert len(found) == 1, (pid, peer_pid, found)
    local, remote = found[0]
    return f"tcp {local} -> {remote}"


def test_tcp_ring_chain_ends_at_the_rank_reading_a_pipe(targets):
    world, odd = 5, 3
    job = targets.start([PYTHON, TCP_RING, hs.READY, "--world", world, "--odd", odd], ready="pipe", timeout=120)
    doc = dump_job(job.pid)
    ranks = ranks_of(doc)
    assert sorted(ranks) == list(range(world))
    host = ranks[0]["host"]
    table = ss_tcp()
    for r in range(world):
        if r == odd:
            continue
        left = (r - 1) % world
        via = ss_peer_edge(table, ranks[r]["pid"], ranks[left]["pid"])
        assert main_thread(ranks[r])["waits_on"] == [
            {"host": host, "pid": ranks[left]["pid"], "rank": left, "via": via}], main_thread(ranks[r])
    # The odd rank reads the pipe whose only write end its launcher holds.
    go = [os.readlink(f"/proc/{ranks[odd]['pid']}/fd/{fd}") for fd in os.listdir(f"/proc/{ranks[odd]['pid']}/fd")]
    pipes = [g for g in go if g.startswith("pipe:[")]
    assert len(pipes) == 1, go
    assert main_thread(ranks[odd])["waits_on"] == [{"host": host, "pid": job.pid, "rank": None, "via": pipes[0]}]
    line = hs.hs_line("tcp_ring.py", "tcp-ring-pipe")
    sentence = f"ranks 2 -> 1 -> 0 -> 4 wait on rank 3, which waits on a pipe written by pid {job.pid} (tcp_ring.py:{line})"
    assert doc["wait_chains"] == [sentence]
    # Every connection of every rank is in its socket table, as ss lists it.
    for r, p in ranks.items():
        mine = sorted(f"{l} -> {rm}" for (l, rm), owner in table.items() if owner == p["pid"])
        assert sorted(p["tcp_connections"]) == mine
    text = hs.dump(job.pid, "--subprocesses", as_json=False)
    assert f"waits: {sentence}\n" in text.stdout, text.stdout
    dot = hs.dump(job.pid, "--subprocesses", "--format", "dot", as_json=False)
    for r in range(world):
        if r != odd:
            left = (r - 1) % world
            assert re.search(rf'w\d+ -> w\d+ \[label="{re.escape(ss_peer_edge(table, ranks[r]["pid"], ranks[left]["pid"]))}", '
                             r'style=dashed\]', dot.stdout), dot.stdout


def ss_unix_peers():
    """inode -> peer inode of unix stream sockets, from `ss -x`."""
    out = subprocess.run(["ss", "-xH"], capture_output=True, text=True, check=True).stdout
    peers = {}
    for line in out.splitlines():
        f = line.split()
        # Netid State Recv-Q Send-Q Local-Address Port Peer-Address Port
        if len(f) >= 8 and f[5].isdigit() and f[7].isdigit():
            peers[int(f[5])] = int(f[7])
    return peers


def test_unix_ring_chain_ends_at_the_sleeping_rank(targets):
    world, odd = 4, 2
    job = targets.start([PYTHON, RING, hs.READY, "--world", world, "--odd", odd], ready="pipe", timeout=120)
    doc = dump_job(job.pid)
    ranks = ranks_of(doc)
    host = ranks[0]["host"]
    peers = ss_unix_peers()
    for r in range(world):
        if r == odd:
            continue
        left = (r - 1) % world
        [edge] = main_thread(ranks[r])["waits_on"]
        m = re.fullmatch(r"unix (\d+) -> (\d+) \((.+)\)", edge["via"])
        assert m, edge
        assert peers[int(m.group(1))] == int(m.group(2))
        assert m.group(3).endswith(f"/r{r}.sock")
        assert (edge["host"], edge["pid"], edge["rank"]) == (host, ranks[left]["pid"], left)
        assert f"socket:[{m.group(2)}]" in {os.readlink(f"/proc/{ranks[left]['pid']}/fd/{fd}")
                                             for fd in os.listdir(f"/proc/{ranks[left]['pid']}/fd")}
    assert main_thread(ranks[odd])["waits_on"] == []
    line = hs.hs_line("ring_allreduce.py", "odd")
    assert doc["wait_chains"] == [f"ranks 1 -> 0 -> 3 wait on rank 2, which sleeps (ring_allreduce.py:{line})"]


def test_gloo_ranks_wait_on_every_peer_and_the_chain_ends_at_the_sleeper(targets):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")
    world, odd = 4, 2
    job = targets.start([PYTHON, GLOO, hs.READY, "--launcher", "spawn", "--world", world, "--odd", odd],
                        ready="pipe", timeout=400)
    # gloo's loop thread can be caught on a CPU handling an event: capture again (at most 10
    # times) until every rank's loop thread is in epoll_wait, the state this test is about.
    for _ in range(10):
        doc = dump_job(job.pid)
        ranks = ranks_of(doc)
        if all(any(t["syscall"] == "epoll_wait" and t["waits_on"] for t in ranks[r]["threads"])
               for r in range(world)):
            break
    host = ranks[0]["host"]
    table = ss_tcp()
    for r in range(world):
        # gloo's device loop thread epoll_waits on its full mesh of pairs: one edge per peer.
        loops = [t for t in ranks[r]["threads"] if t["syscall"] == "epoll_wait" and t["waits_on"]]
        assert len(loops) == 1, [(t["tid"], t["syscall"], t["waits_on"]) for t in ranks[r]["threads"]]
        expected = sorted((ss_peer_edge(table, ranks[r]["pid"], ranks[o]["pid"]), o) for o in range(world) if o != r)
        got = sorted((e["via"], e["rank"]) for e in loops[0]["waits_on"])
        assert got == expected
        assert all(e["host"] == host for e in loops[0]["waits_on"])
    line = hs.hs_line("hang_gloo.py", "gloo-odd")
    assert doc["wait_chains"] == [f"ranks 0-1,3 wait on rank 2, which sleeps (hang_gloo.py:{line})"]
