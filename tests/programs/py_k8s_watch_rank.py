"""A rank of a pretend training job, for `watch --k8s` (tests/integration/test_k8s_watch.py).

Usage: python3 py_k8s_watch_rank.py READY_FIFO   (RANK and ODD_RANK in the environment)

Every rank but ODD_RANK computes in step() (on CPU the whole time); ODD_RANK parks in
load_checkpoint() (asleep). Each writes "ready" into READY_FIFO first.
"""
import os
import sys
import time


def ready(fifo):
    with open(fifo, "w") as f:
        f.write("ready\n")


def step():
    return sum(i * i for i in range(10000))  # HS-LINE: step


def load_checkpoint():
    time.sleep(3600)  # HS-LINE: load_checkpoint


def train(fifo):
    ready(fifo)
    if os.environ["RANK"] == os.environ["ODD_RANK"]:
        load_checkpoint()  # HS-LINE: train_odd
    while True:
        step()  # HS-LINE: train


train(sys.argv[1])  # HS-LINE: module
