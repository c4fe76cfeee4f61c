#!/usr/bin/env python3
"""A token ring over TCP where one rank waits on a pipe instead of starting the token.

Why: the wait chain's oracle. Rank R may send to its right neighbour only after it received the
token from its left one; rank ODD should start the token but first reads a "go" byte from a pipe
that its launcher holds open and never writes. So every other rank blocks in recv() on its
left neighbour's connection, and the chain is exact: ODD+1 waits on ODD, ODD+2 on ODD+1, ...
The launcher binds every rank's listening socket on 127.0.0.1 (port 0) before it starts the
ranks, so each rank knows its right neighbour's port, and says "ready" once every rank is
parked (hs_rank_ready.py).

usage: tcp_ring.py READY [--world N] [--odd R]
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

DEADLINE_S = 60.0


def rank_main(args):
    rank = int(os.environ["RANK"])
    listener = socket.socket(fileno=args.listen_fd)
    right = socket.create_connection(("127.0.0.1", args.right_port), timeout=DEADLINE_S)
    right.settimeout(None)
    listener.settimeout(DEADLINE_S)
    left, _ = listener.accept()
    left.settimeout(None)
    if rank == args.odd:
        ready.notify_parked(rank, str(ready.SYS_READ))
        os.read(args.go_fd, 1)  # HS-LINE: tcp-ring-pipe
        right.sendall(b"t")
    ready.notify_parked(rank, str(ready.SYS_RECVFROM))
    token = left.recv(1)  # HS-LINE: tcp-ring-recv
    right.sendall(token)
    time.sleep(3600)


def launch(args):
    listeners = []
    for _ in range(args.world):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        listeners.append(s)
    ports = [s.getsockname()[1] for s in listeners]
    go_read, go_write = os.pipe()  # the launcher keeps the write end and never writes
    rundir = tempfile.mkdtemp(prefix="hs-tcp-ring-")
    ctl = os.path.join(rundir, "ctl")
    collector = ready.ParkCollector(ctl)
    ranks = []
    for r in range(args.world):
        fds = [listeners[r].fileno()] + ([go_read] if r == args.odd else [])
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.world), **{ready.CTL_ENV: ctl})
        argv = [sys.executable, os.path.abspath(__file__), "-", "--rank", "--world", str(args.world),
                "--odd", str(args.odd), "--listen-fd", str(listeners[r].fileno()),
                "--right-port", str(ports[(r + 1) % args.world]), "--go-fd", str(go_read)]
        ranks.append(subprocess.Popen(argv, env=env, pass_fds=fds, stdin=subprocess.DEVNULL))
    for s in listeners:
        s.close()
    os.close(go_read)
    try:
        collector.wait(range(args.world), timeout=DEADLINE_S,
                       alive=lambda: all(p.poll() is None for p in ranks))
    except ready.NotReady as e:
        print(f"tcp_ring: {e}", file=sys.stderr)
        for p in ranks:
            p.kill()
        sys.exit(3)
    finally:
        collector.close()
    ready.say_ready(None if args.ready == "-" else args.ready)
    for p in ranks:
        p.wait()
    os.close(go_write)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ready")
    ap.add_argument("--world", type=int, default=5)
    ap.add_argument("--odd", type=int, default=3)
    ap.add_argument("--rank", action="store_true")
    ap.add_argument("--listen-fd", type=int)
    ap.add_argument("--right-port", type=int)
    ap.add_argument("--go-fd", type=int)
    args = ap.parse_args()
    if args.rank:
        rank_main(args)
    else:
        launch(args)


if __name__ == "__main__":
    main()
