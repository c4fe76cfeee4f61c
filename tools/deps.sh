#!/usr/bin/env bash
# Installs the Debian packages hangscan needs to build (`build`: what `make demo` and
# `make install` need, nothing more), to make its Debian package (`package`) or to run every
# test (`test`).
# As root it runs apt-get; otherwise it prints the exact command and exits 1.
set -euo pipefail
what=${1:-build}

# libbpf-dev, bpftool and clang build the eBPF recorder of `hangscan watch` (cmake/bpf.cmake):
# in the build set, so the binary `make demo` gives a new user records with eBPF (issue 37).
build_pkgs=(build-essential cmake pkg-config libunwind-dev libdw-dev libelf-dev libcli11-dev libboost-dev
  libboost-filesystem-dev libfmt-dev libgtest-dev libgmock-dev nlohmann-json3-dev libzstd-dev liblz4-dev
  python3 libbpf-dev bpftool clang)
# make deb: CPack's DEB generator needs `file` to find the ELF files dpkg-shlibdeps reads.
package_pkgs=(file dpkg-dev)
# elfutils, gdb: oracles and gcore in the tests. man-db: the install test reads hangscan(1).
# iproute2: the Slurm test cluster looks for free ports with `ss`.
test_pkgs=(elfutils gdb python3-pytest python3.11-dbg libc6-dbg python3-torch python3-numpy openmpi-bin
  libopenmpi-dev mpich libmpich-dev slurmctld slurmd slurm-client munge slurmdbd mariadb-server pdsh openssh-server
  openssh-client graphviz strace util-linux procps iproute2 man-db zstd lz4 libdeflate0 clang-format clang-tidy
  python3-mpi4py python3-joblib memcached chromium libpython3.11-dev podman runc mmdebstrap
  time)
# libdeflate0: loaded at run time when present (inflating compressed DWARF ~3x faster than
# zlib); hangscan works without it. In the test set so benchmarks are the same everywhere.
# libpython3.11-dev: Python.h and libpython3.11.so, for the extension that
# test_python_two_runtimes builds (a second runtime in Debian's python3.11).
# time: /usr/bin/time -f %M, the peak RSS test_hostile_sources asserts.
# podman, runc, mmdebstrap: tests/integration/test_containers.py (runc: crun refuses cgroup v1
# hybrid hosts; the image is built once from Debian's mirror and cached in /var/cache/hangscan-tests).
# clang-format, clang-tidy: `make format` and `make lint` (.clang-format, .clang-tidy).
# chromium: the HTML report is tested in a real headless browser (tests/integration/browser.py).
# python3-mpi4py, python3-joblib, memcached: real software nobody here wrote, made to hang from
# outside by tests/integration/test_field_corpus.py (issue 32, "Field truth").
# slurmdbd, mariadb-server: Slurm accounting (sacct) for tests/integration/test_slurm_deaths.py;
# cluster.sh runs mariadbd as a plain process (installing the package starts no service where
# policy-rc.d forbids it, as in a chroot or container).

pkgs=("${build_pkgs[@]}")
case $what in
  build) ;;
  package) pkgs+=("${package_pkgs[@]}") ;;
  test) pkgs+=("${package_pkgs[@]}" "${test_pkgs[@]}") ;;
  *) echo "usage: tools/deps.sh build|package|test" >&2; exit 64 ;;
esac

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
