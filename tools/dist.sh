#!/usr/bin/env bash
# `make dist`: one self-contained tarball, hangscan-VERSION-x86_64-linux.tar.gz, that runs on a
# node with nothing of hangscan's installed: only a Linux kernel (3.2 or newer) is needed.
#
# usage: tools/dist.sh BUILD_DIR DIST_DIR
#
# Layout of hangscan-VERSION/ in the tarball:
#   bin/hangscan       a POSIX sh launcher: runs libexec/hangscan through lib/'s own dynamic
#                      loader with lib/ as the only library path (`ld.so --library-path`)
#   libexec/hangscan   the binary of BUILD_DIR, stripped (the eBPF object is inside it)
#   lib/               every shared library it loads, glibc's own included (libc, libm, the
#                      loader; libpthread/libdl/librt for libraries the host gives dlopen, e.g.
#                      NVML), libstdc++/libgcc_s, libdw/libelf, libunwind, libbpf, fmt, boost
#                      filesystem, zlib/zstd/lz4/lzma/bz2, and libdeflate when the build machine has it
#   share/             hangscan(1), the bash completion, README and docs (cmake --install)
#
# Why glibc travels too: a binary linked on Debian 12 needs GLIBC_2.34 symbols (the 2.34
# __libc_start_main and the pthread functions that moved into libc), and Debian 12's libstdc++ and
# libdw need 2.34-2.36; RHEL 8 and SLES 15 have 2.28-2.31. Starting the binary through the bundled
# loader makes the node's glibc irrelevant, without a second toolchain or an old sysroot. The
# launcher tells the binary its own path (HANGSCAN_DIST_EXE) so the fan-out's default
# --agent-path is this launcher, not the loader that /proc/self/exe names.
set -euo pipefail
build=${1:?usage: tools/dist.sh BUILD_DIR DIST_DIR}
dist=${2:?usage: tools/dist.sh BUILD_DIR DIST_DIR}
bin=$build/hangscan
[ -x "$bin" ] || { echo "dist: $bin is not built" >&2; echo "hint: make dist builds it first" >&2; exit 2; }
version=$("$bin" --version | awk '{print $2; exit}')
name=hangscan-$version
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/$name

cmake --install "$build" --prefix "$stage" >/dev/null
mkdir -p "$stage/libexec" "$stage/lib"
mv "$stage/bin/hangscan" "$stage/libexec/hangscan"
strip --strip-unneeded "$stage/libexec/hangscan"

# Every library the binary loads, by the name it asks for (its soname), plus the loader.
copy_lib() {  # PATH [NAME]
  local dest=$stage/lib/${2:-$(basename "$1")}
  cp -L "$1" "$dest"
  chmod 0755 "$dest"
  strip --strip-unneeded "$dest"
}
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r soname path; do
  copy_lib "$path" "$soname"
done
loader=$(readlink -f /lib64/ld-linux-x86-64.so.2)
copy_lib "$loader" ld-linux-x86-64.so.2
libdir=$(dirname "$(ldd "$bin" | awk '$1 == "libc.so.6" {print $3}')")
for extra in libpthread.so.0 libdl.so.2 librt.so.1 libdeflate.so.0; do
  for d in "$libdir" /usr/lib/x86_64-linux-gnu; do
    if [ -e "$d/$extra" ]; then copy_lib "$d/$extra" "$extra"; break; fi
  done
done

cat >"$stage/bin/hangscan" <<'EOF'
#!/bin/sh
# hangscan from the self-contained tarball (make dist): the binary in ../libexec runs through
# the loader and libraries in ../lib, whatever the node has installed. Symlinks to this file work.
# (Shell built-ins only, but for a symlink: each fork costs start-up time.)
self=$0
case $self in */*) ;; *) self=$(command -v -- "$self") ;; esac
case $self in /*) ;; *) self=$PWD/$self ;; esac
if [ -L "$self" ]; then self=$(readlink -f "$self"); fi
top=${self%/bin/*}
HANGSCAN_DIST_EXE=$self exec "$top/lib/ld-linux-x86-64.so.2" --library-path "$top/lib" \
  --argv0 "$0" "$top/libexec/hangscan" "$@"
EOF
chmod 0755 "$stage/bin/hangscan"

out=$dist/$name-x86_64-linux.tar.gz
tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$out.tmp" "$name"
mv "$out.tmp" "$out"
echo "$out"
