#!/usr/bin/env bash
# Installs the Debian packages hangscan needs to build (`build`) or to run every test (`test`).
# As root it runs apt-get; otherwise it prints the exact command and exits 1.
set -euo pipefail
what=${1:-build}

build_pkgs=(build-essential cmake pkg-config libunwind-dev libdw-dev libelf-dev libbpf-dev bpftool
  clang libcli11-dev libboost-dev libboost-filesystem-dev libfmt-dev libgtest-dev libgmock-dev
  nlohmann-json3-dev libzstd-dev liblz4-dev elfutils gdb python3)
test_pkgs=(python3-pytest python3.11-dbg libc6-dbg python3-torch python3-numpy openmpi-bin libopenmpi-dev
  mpich libmpich-dev slurmctld slurmd slurm-client munge pdsh openssh-server openssh-client
  graphviz strace util-linux procps zstd lz4 libdeflate0)
# libdeflate0: loaded at run time when present (inflating compressed DWARF ~3x faster than
# zlib); hangscan works without it. In the test set so benchmarks are the same everywhere.

pkgs=("${build_pkgs[@]}")
[ "$what" = test ] && pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "hangscan: missing Debian packages: ${missing[*]}" >&2
  echo "hint: run as root: apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "hangscan: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
