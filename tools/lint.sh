#!/usr/bin/env bash
# `make format`, `make format-fix` and `make lint`: the layout (.clang-format) and the lint set
# (.clang-tidy) over the tree, one place for the file lists both use.
#   tools/lint.sh format        check: shows each line clang-format would change, fails if any
#   tools/lint.sh format-fix    apply clang-format to those files
#   tools/lint.sh lint BUILD    clang-tidy over src/ and tools/ from BUILD/compile_commands.json
# Why a script: tests/programs is never reformatted (its line numbers are asserted) and
# bpf/vmlinux.h is generated (docs/design.md), so "every C/C++ file" needs a filter; and clang-tidy
# (clang 14) refuses one GCC-only flag of the build (-fno-var-tracking-assignments), so it reads a
# copy of the compile database without it, limited to src/ and tools/.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
jobs=${JOBS:-$(nproc)}

formatted_files() {
  git ls-files '*.h' '*.cpp' '*.c' | grep -v -e '^tests/programs/' -e '^bpf/vmlinux\.h$'
}

need() {
  command -v "$1" >/dev/null && return 0
  echo "hangscan: $1 is not installed" >&2
  echo "hint: run as root: tools/deps.sh test (it installs $2)" >&2
  exit 1
}

case $what in
  format)
    need clang-format clang-format
    formatted_files | xargs clang-format --dry-run --Werror
    echo "format: clean ($(formatted_files | wc -l) files)"
    ;;
  format-fix)
    need clang-format clang-format
    formatted_files | xargs clang-format -i
    ;;
  lint)
    need clang-tidy clang-tidy
    build=${2:-build}
    if [ ! -f "$build/compile_commands.json" ]; then
      echo "hangscan: no $build/compile_commands.json" >&2
      echo "hint: configure and build first: make build (or make lint, which does both)" >&2
      exit 1
    fi
    db="$build/lint"
    mkdir -p "$db"
    python3 - "$build/compile_commands.json" "$db/compile_commands.json" "$PWD" <<'EOF'
import json, re, sys
src, dst, root = sys.argv[1], sys.argv[2], sys.argv[3] + "/"
# A unity build (HANGSCAN_UNITY, the default) lists its batches, build/.../unity_N_cxx.cxx,
# not the sources: each batch's #include lines name them, and each gets the batch's command.
def sources(entry):
    if "/Unity/unity_" not in entry["file"]:
        return [entry["file"]]
    text = open(entry["file"]).read()
    return re.findall(r'^#include "(/[^"]+\.(?:cpp|c))"$', text, re.M)
keep = []
for entry in json.load(open(src)):
    for path in sources(entry):
        rel = path[len(root):] if path.startswith(root) else ""
        if rel.startswith(("src/", "tools/")):
            command = entry["command"].replace(" -fno-var-tracking-assignments", "")
            keep.append(dict(entry, file=path, command=command.replace(entry["file"], path)))
json.dump(keep, open(dst, "w"), indent=1)
EOF
    python3 -c 'import json,sys; [print(e["file"]) for e in json.load(open(sys.argv[1]))]' \
      "$db/compile_commands.json" >"$db/files"
    rc=0
    # -Wno-sign-compare: GCC, the build's compiler, checks it (-Werror); clang also sees it
    # inside a system header's macro (NLMSG_OK), where GCC rightly does not.
    xargs -P "$jobs" -n 4 clang-tidy -p "$db" --quiet --warnings-as-errors='*' \
      --extra-arg=-Wno-sign-compare <"$db/files" \
      2> >(grep -v -e '^[0-9]* warnings\? generated\.$' -e '^Suppressed [0-9]* warnings' \
        -e '^Use -header-filter=' -e '^[0-9]* warnings\? treated as errors$' >&2) || rc=$?
    wait
    [ $rc -eq 0 ] && echo "lint: clean ($(wc -l <"$db/files") files)"
    exit $rc
    ;;
  *)
    echo "usage: tools/lint.sh format|format-fix|lint [BUILD]" >&2
    exit 64
    ;;
esac
