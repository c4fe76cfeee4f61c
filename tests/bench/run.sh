#!/usr/bin/env bash
# `make bench`: times `hangscan dump` against eu-stack and gdb on the same targets.
# Usage: tests/bench/run.sh [BUILD_DIR] [bench_dump.py options, e.g. --runs 9 --markdown,
#        --baseline OLD_HANGSCAN to time an older binary side by side]
# A benchmark, not a timed test: it prints numbers; it fails only when a tool fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
build=$(cd "$build" && pwd)
for f in hangscan programs/many_threads; do
  if [ ! -x "$build/$f" ]; then
    echo "bench: $build/$f is not built" >&2
    echo "hint: make build (or cmake --build $build --target hangscan test_programs)" >&2
    exit 2
  fi
done
exec /usr/bin/python3 "$here/bench_dump.py" --build "$build" "$@"
