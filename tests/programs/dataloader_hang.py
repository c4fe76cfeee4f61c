"""A torch DataLoader(num_workers=2) whose __getitem__ blocks on a socket that never answers.

Usage: python3 dataloader_hang.py READY

The dataset's item 0 connects to a TCP listener of the main process that never accepts nor
answers, and waits in recv at HS-LINE getitem; every other item returns at once. Worker 0
(item 0) is stuck; worker 1 serves its items and goes back to torch's worker loop, idle; the
main process waits in next(). A thread of the main process says "ready" (fd number or FIFO
path) once item 0 waits in recv, the other worker's items are done and both workers sit in a
system call. Needs python3-torch.
"""
import multiprocessing as mp
import os
import socket
import sys
import threading
import time

import torch.utils.data

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402
from pool_hang import all_in_syscalls  # noqa: E402

CTX = mp.get_context("fork")
STUCK = CTX.Event()
DONE = CTX.Value("i", 0)
LISTENER = socket.create_server(("127.0.0.1", 0), backlog=4)


class Blocking(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 0:
            conn = socket.create_connection(LISTENER.getsockname())
            STUCK.set()
            return conn.recv(1)  # HS-LINE: getitem
        with DONE.get_lock():
            DONE.value += 1
        return i


def say_when_parked(loader_iter, where):
    end = time.monotonic() + 60
    if not STUCK.wait(60):
        return
    while DONE.value < 2:  # worker 1 serves items 1 and 3 before the main process waits
        if time.monotonic() > end:
            return
        time.sleep(0.01)
    if all_in_syscalls([w.pid for w in loader_iter._workers], end):
        ready.say_ready(where)


def main():
    loader = torch.utils.data.DataLoader(Blocking(), num_workers=2, batch_size=None,
                                         multiprocessing_context=CTX)
    batches = iter(loader)
    threading.Thread(target=say_when_parked, args=(batches, sys.argv[1]), daemon=True).start()
    for _ in batches:  # HS-LINE: next
        pass


if __name__ == "__main__":
    main()
