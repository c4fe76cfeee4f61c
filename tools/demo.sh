#!/usr/bin/env bash
# `make demo`: the main job of hangscan on a real hung multi-rank workload.
#
# Starts tests/programs/ring_allreduce.py (stdlib python only): a launcher and 4 ranks doing a
# ring all-reduce over Unix sockets, where rank 2 takes a different path and never joins, so
# ranks 0, 1 and 3 hang in all_reduce. Once every rank sits where it hangs (the job says
# "ready"), runs `hangscan dump --pid LAUNCHER --subprocesses`, prints its report, and stops
# everything it started (the job's process group, on any exit).
#
# usage: tools/demo.sh BUILD_DIR        (HS_DEMO=gloo: the torch.distributed gloo job instead,
#                                        when python3-torch is installed)
set -euo pipefail

build=${1:-build}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hangscan="$build/hangscan"
if [ ! -x "$hangscan" ]; then
  echo "demo: $hangscan is not built" >&2
  echo "hint: run 'make build' (or pass the build directory: tools/demo.sh BUILD_DIR)" >&2
  exit 2
fi
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3) || { echo "demo: python3 is missing" >&2; exit 2; }

tmp=$(mktemp -d -t hangscan-demo.XXXXXX)
job=
cleanup() {
  if [ -n "$job" ]; then
    kill -KILL -- "-$job" 2>/dev/null || true
    wait "$job" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

program=(ring_allreduce.py "$tmp/ready" --world 4 --odd 2)
what="a 4-rank ring all-reduce over local sockets; rank 2 takes another path and never joins"
ready_s=60
if [ "${HS_DEMO:-}" = gloo ] && "$python" -c "import torch.distributed" 2>/dev/null; then
  program=(hang_gloo.py "$tmp/ready" --launcher spawn --world 4 --odd 2)
  what="a 4-rank torch.distributed gloo job (torch.multiprocessing.spawn); rank 2 skips an all_reduce"
  ready_s=300
fi

mkfifo "$tmp/ready"
# setsid: the job leads its own process group, so one kill stops the launcher, every rank
# and every helper. A background job of a script is not a group leader, so setsid does not
# fork and $! is the launcher itself.
setsid "$python" "$src/tests/programs/${program[0]}" "${program[@]:1}" </dev/null >"$tmp/job.log" 2>&1 &
job=$!
# Read-write open: never blocks, and a job that dies early does not leave us waiting forever.
exec 3<>"$tmp/ready"
if ! read -r -t "$ready_s" -u 3 line || [ "$line" != ready ]; then
  echo "demo: the job did not get ready within $ready_s s" >&2
  cat "$tmp/job.log" >&2
  exit 1
fi
exec 3<&-

echo "demo: $what."
echo "demo: launcher pid $job; running: $hangscan dump --pid $job --subprocesses"
echo
rc=0
"$hangscan" dump --pid "$job" --subprocesses || rc=$?
echo
echo "demo: hangscan exited with $rc; stopping the job (process group $job)."
# 0 complete, 1 partial: both are a report.
[ "$rc" -le 1 ]
