"""A rank of a pretend training job, for the Kubernetes tests: one per container ("pod").

Usage: python3 py_k8s_rank.py READY_FIFO   (RANK, WORLD_SIZE and ODD_RANK in the environment)

Every rank but ODD_RANK parks in all_reduce(); ODD_RANK parks in load_checkpoint() instead.
Each prints one line (its pod's log, for --pod-logs) and writes it, marked "(file)", to
/tmp/train.log in its container (for --pod-log-file), writes "ready" into READY_FIFO and sleeps at
the line marked "# MARK name".
"""
import os
import sys
import time


def ready(fifo):
    with open(fifo, "w") as f:
        f.write("ready\n")


def say(text):
    print(text, flush=True)
    with open("/tmp/train.log", "a") as f:
        f.write(f"step 16 done\n{text} (file)\n")


def all_reduce(fifo):
    say(f"rank {os.environ['RANK']}: all_reduce of step 17")
    ready(fifo)
    time.sleep(3600)  # MARK all_reduce


def load_checkpoint(fifo):
    say(f"rank {os.environ['RANK']}: loading checkpoint step-42")
    ready(fifo)
    time.sleep(3600)  # MARK load_checkpoint


def train(fifo):
    if os.environ["RANK"] == os.environ["ODD_RANK"]:
        load_checkpoint(fifo)  # MARK train_odd
    all_reduce(fifo)  # MARK train


train(sys.argv[1])  # MARK module
