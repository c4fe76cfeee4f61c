#!/usr/bin/env python3
"""Ranks meeting at a key-value store that rank 0 serves from a thread, as torch's TCPStore.

Why: the wait graph's oracle for a socket held by a thread of a rank. Rank 0 starts a "store"
thread that serves a listening socket (poll, with a timeout, over it and every client,
HS-LINE store-poll) and, like every rank, connects to the store as a client and waits in
recv() for the barrier's answer (HS-LINE store-recv). Rank ODD never arrives (it sleeps, HS-LINE store-late), so the
store never answers: ranks wait on rank 0, whose main thread waits on its own store thread.
The launcher binds the store's listening socket (port 0) before it starts the ranks and says
"ready" once every rank and the store thread are parked (hs_rank_ready.py).

usage: store_ranks.py READY [--world N] [--odd R]
"""

import argparse
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

DEADLINE_S = 60.0


def serve(listener, world):
    # poll() with a timeout, as servers write it: a ptrace stop restarts it as restart_syscall.
    clients = {listener.fileno(): listener}
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    while True:
        ready.notify_parked(world, str(ready.SYS_POLL))
        for fd, _ in poller.poll(3600 * 1000):  # HS-LINE: store-poll
            s = clients[fd]
            if s is listener:
                c = listener.accept()[0]
                clients[c.fileno()] = c
                poller.register(c, select.POLLIN)
            elif not s.recv(64):
                poller.unregister(s)
                del clients[fd]


def rank_main(args):
    rank = int(os.environ["RANK"])
    if rank == args.odd:
        ready.notify_parked(rank, ready.SLEEP)
        time.sleep(3600)  # HS-LINE: store-late
    if rank == 0:
        listener = socket.socket(fileno=args.listen_fd)
        threading.Thread(target=serve, args=(listener, args.world), name="store", daemon=True).start()
    client = socket.create_connection(("127.0.0.1", args.port), timeout=DEADLINE_S)
    client.settimeout(None)
    client.sendall(b"barrier\n")
    ready.notify_parked(rank, str(ready.SYS_RECVFROM))
    client.recv(1)  # HS-LINE: store-recv
    time.sleep(3600)


def launch(args):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    rundir = tempfile.mkdtemp(prefix="hs-store-")
    ctl = os.path.join(rundir, "ctl")
    collector = ready.ParkCollector(ctl)
    ranks = []
    for r in range(args.world):
        fds = [listener.fileno()] if r == 0 else []
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.world), **{ready.CTL_ENV: ctl})
        argv = [sys.executable, os.path.abspath(__file__), "-", "--rank", "--world", str(args.world),
                "--odd", str(args.odd), "--listen-fd", str(listener.fileno()), "--port", str(port)]
        ranks.append(subprocess.Popen(argv, env=env, pass_fds=fds, stdin=subprocess.DEVNULL))
    listener.close()
    try:
        # "rank" WORLD is rank 0's store thread.
        collector.wait(range(args.world + 1), timeout=DEADLINE_S,
                       alive=lambda: all(p.poll() is None for p in ranks))
    except ready.NotReady as e:
        print(f"store_ranks: {e}", file=sys.stderr)
        for p in ranks:
            p.kill()
        sys.exit(3)
    finally:
        collector.close()
        os.rmdir(rundir)
    ready.say_ready(None if args.ready == "-" else args.ready)
    for p in ranks:
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ready")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--odd", type=int, default=2)
    ap.add_argument("--rank", action="store_true")
    ap.add_argument("--listen-fd", type=int)
    ap.add_argument("--port", type=int)
    args = ap.parse_args()
    if args.rank:
        rank_main(args)
    else:
        launch(args)


if __name__ == "__main__":
    main()
