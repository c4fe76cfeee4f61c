#!/usr/bin/env python3
"""Four ranks blocked on the same line of a step loop, one of them a step ahead (stdlib only).

Why: a rank that skips one sync runs a step ahead of the others and then blocks in the same
collective on the same line: every stack is equal, and only the loop counter (a local) tells
that rank apart. The launcher is the collective's coordinator: each rank says it arrived at a
sync (a byte on its stdout) and waits for the go (a byte on its stdin); the launcher lets
HANG syncs through and holds the next one forever. Rank SKIP skipped the sync of step 3, so
when the job hangs ranks 0,1,3 sit at step=HANG and rank SKIP at step=HANG+1, all in
all_reduce at the line marked as the sync. The launcher says "ready" once every rank
sleeps there (hs_rank_ready.py).

usage: step_skew.py READY [--world N] [--skip R] [--hang S] [--spin]
--spin: the ranks busy-wait for the go on one line (a poll counter changes, the line does not).
"""

import argparse
import os
import select
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

DEADLINE_S = 60.0


def all_reduce(step, nth, hang, spin):
    """The step's collective (the nth sync): arrive, then wait for the coordinator's go
    (--spin: poll for it on one line, counting the polls, as a busy-waiting barrier does)."""
    os.write(1, b"a")
    if nth >= hang:
        ready.notify_parked(int(os.environ["RANK"]), "spin" if spin else str(ready.SYS_READ))
    polls = 0
    while spin and not select.select([0], [], [], 0)[0]: polls += 1  # HS-LINE: spin
    return os.read(0, 1)  # HS-LINE: sync


def train(rank, skip, hang, spin):
    syncs = 0
    for step in range(hang + 2):
        if rank == skip and step == 3:
            continue  # this rank skips one sync: from here on it runs a step ahead
        all_reduce(step, syncs, hang, spin)  # HS-LINE: train_sync
        syncs += 1


def coordinate(ranks, hang):
    """Lets `hang` syncs through, then holds the next one: reads every rank's arrival first."""
    for sync in range(hang + 1):
        for p in ranks:
            if os.read(p.stdout.fileno(), 1) != b"a":
                sys.exit(3)  # a rank died
        if sync < hang:
            for p in ranks:
                os.write(p.stdin.fileno(), b"g")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ready")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--skip", type=int, default=2)
    ap.add_argument("--hang", type=int, default=10)
    ap.add_argument("--spin", action="store_true")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        train(args.rank, args.skip, args.hang, args.spin)
        return
    ctl = os.path.join(os.environ.get("TMPDIR", "/tmp"), "hs-skew-%d.ctl" % os.getpid())
    ranks = []
    with ready.ParkCollector(ctl) as collector:
        for r in range(args.world):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.world),
                       **{ready.CTL_ENV: ctl})
            ranks.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "-", "--rank", str(r), "--skip",
                 str(args.skip), "--hang", str(args.hang)] + (["--spin"] if args.spin else []),
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        coordinate(ranks, args.hang)
        try:
            collector.wait(range(args.world), timeout=DEADLINE_S,
                           alive=lambda: all(p.poll() is None for p in ranks))
        except ready.NotReady as e:
            print("step_skew: %s" % e, file=sys.stderr)
            for p in ranks:
                p.kill()
            sys.exit(3)
    ready.say_ready(None if args.ready == "-" else args.ready)
    for p in ranks:
        p.wait()


if __name__ == "__main__":
    main()
