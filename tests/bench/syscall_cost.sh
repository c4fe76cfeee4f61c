#!/bin/bash
# What the recorder adds to one system call: a loop of 1e6 getppid() calls, timed per round,
# with no recorder, with the recorder watching another process, and with the loop watched.
# Why: the raw_syscalls hooks run on every system call of the machine (docs/performance.md,
# "hangscan watch"); this measures their cost directly, without bpf_stats' own overhead.
# usage: tests/bench/syscall_cost.sh build/hangscan   (root; prints the best 3 of 5 rounds, ns/call)
set -euo pipefail
hs=$(realpath "$1")
dir=$(mktemp -d /tmp/hs-syscost.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
cat > "$dir/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char** argv) {
  int rounds = atoi(argv[1]);
  printf("ready\n"); fflush(stdout);
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    for (int i = 0; i < 1000000; i++) syscall(SYS_getppid);
    printf("%.0f\n", (now() - t0) * 1e3); fflush(stdout);
  }
  return 0;
}
C
cc -O2 -o "$dir/loop" "$dir/loop.c"
best3() { sort -n | head -3 | tr '\n' ' '; }
start_watch() {  # PID: starts watch on it, returns when it records
  "$hs" watch --pid "$1" --for 60 > /dev/null 2> "$dir/watch.err" & pids+=($!)
  until grep -q recording "$dir/watch.err"; do sleep 0.1; done
}
echo "ns per getppid(), best 3 of 5 rounds of 1e6 calls"
echo "no recorder:             $("$dir/loop" 5 | tail -n +2 | best3)"
sleep 600 & pids+=($!)
start_watch $!
echo "recorder, not watched:   $("$dir/loop" 5 | tail -n +2 | best3)"
kill -INT "${pids[-1]}"; wait "${pids[-1]}" || true
mkfifo "$dir/out"
"$dir/loop" 7 > "$dir/out" & pids+=($!)
loop=$!
exec 3< "$dir/out"
read -r -u 3 _
start_watch "$loop"
read -r -u 3 _; read -r -u 3 _  # rounds that may have begun before recording
echo "recorder, loop watched:  $(for _ in 1 2 3 4 5; do read -r -u 3 x && echo "$x"; done | best3)"
kill -INT "${pids[-1]}"; wait "${pids[-1]}" || true
wait "$loop"
