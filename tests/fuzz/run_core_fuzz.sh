#!/usr/bin/env bash
# Bounded libFuzzer run over the core reader, for CI: tests/fuzz/run_core_fuzz.sh BUILD [SECONDS]
# BUILD must be configured with -DHANGSCAN_FUZZ=ON (clang++ with libFuzzer; Debian: clang).
# Starts from the generated seed cores; a crash leaves its input in BUILD/fuzz/core-artifacts/
# and fails the script.
set -euo pipefail
build=${1:?usage: run_core_fuzz.sh BUILD [SECONDS]}
seconds=${2:-30}
cmake --build "$build" --target hs_fuzz_core -j 2
work="$build/fuzz/core-corpus"
mkdir -p "$work" "$build/fuzz/core-artifacts"
"$build/tests/fuzz/hs_core_seeds" "$work" >/dev/null
exec "$build/fuzz/hs_fuzz_core" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$build/fuzz/core-artifacts/" "$work"
