#!/usr/bin/env bash
# The README's commands on a new Debian 12 machine, in the order a new user types them.
#
# Makes a minimal Debian 12 root (mmdebstrap --variant=minbase, only git, make and
# ca-certificates added), clones this checkout's committed HEAD into it, and runs `make demo`,
# then `make test` inside it (chroot; /proc, /sys and /dev with /dev/pts bound; resolv.conf,
# hosts and hostname copied). Why: on a machine that already has every package, a step that
# only works because something was installed earlier (a build configured before the test
# packages came) never fails; here nothing is installed but what the README's commands install.
#
# usage: tools/fresh-machine.sh [--package] [--keep] [--run 'CMD']
#   --package  also, after `make demo`: `make deb` in the root, then a second fresh root (a copy
#              of the first as mmdebstrap made it) where the package is installed with apt (its
#              dependencies resolved from the registry alone; man-db added to read the page), and `hangscan --version`, `man hangscan` and a `dump` of a test program
#              run from the installed files.
#   --keep     leave the root(s) in place (printed) instead of removing them.
#   --run CMD  run the bash line CMD in the clone (/home/hangscan) instead of demo and test.
# Environment: HS_FRESH_DIR (where roots go, default /var/tmp), HS_FRESH_MIRRORS (apt source
# lines, ';'-separated; default Debian 12 with updates and security), HS_CORE_PATTERN_LOCK (a
# host file the tests flock while they change kernel.core_pattern, shared with other users of
# this machine).
#
# Prints both times and the first failure; make test's own output is passed through, and its
# closing summary is printed again at the very end. Exit code: make test's (1 if make test
# passed but make demo or the package check failed); 75 when no root could be made here (not
# root, no mmdebstrap, no mount namespace, no registry): nothing was run.
# Every mount lives in a private mount namespace of its phase, so the kernel removes it when the
# phase ends, however it ends; processes left running inside a root are reported and stopped.
set -euo pipefail
# One compound command: bash reads it whole before running it, so editing this file while it
# runs (a check takes half an hour) cannot change what the running check does.
{
EX_NOROOT=75
PY314_DIR=/opt/hs-py314  # in the new root: Debian sid's root with python3.14 (HS_PY314_ROOT)
self=$(readlink -f "${BASH_SOURCE[0]}")
src=$(cd "$(dirname "$self")/.." && pwd)

# ---- inside a phase's mount namespace: bind, chroot, run (not for direct use) -------------
if [ "${1:-}" = --enter ]; then
  root=$2 cmd=$3
  # (The root is not bound onto itself: with / a mount point, podman and `unshare --mount` start
  # inside the chroot, but podman's volumes and a bind over a file in another namespace do not
  # behave as on a real machine (seen 2026-11-27: 4 container, k8s and FIFO-bind tests failed),
  # so those tests skip here, say why, and run on a real machine.)
  for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
  mount --make-rslave "$root/proc" "$root/sys" "$root/dev" 2>/dev/null || true
  # Other releases' roots for the tarball's tests (test_dist.py), made on this machine (below):
  # read-only, so a test cannot change this machine's cache.
  if [ -n "${HS_TEST_ROOTS:-}" ] && [ -d "$HS_TEST_ROOTS" ]; then
    mkdir -p "$root/var/cache/hangscan-tests"
    mount --bind "$HS_TEST_ROOTS" "$root/var/cache/hangscan-tests" &&
      mount -o remount,bind,ro "$root/var/cache/hangscan-tests"
  fi
  envs=(HOME=/root LANG=C.UTF-8 TERM=dumb "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        DEBIAN_FRONTEND=noninteractive "CI=${CI:-}")
  # Both roots made: test_dist.py then fails where it would skip (a passing ctest line must mean
  # that the tarball ran on the other releases, not that every case skipped).
  if compgen -G "${HS_TEST_ROOTS:-/nonexistent}/bullseye-essential-*.tar" >/dev/null &&
     compgen -G "${HS_TEST_ROOTS:-/nonexistent}/trixie-essential-*.tar" >/dev/null; then
    envs+=(HS_DIST_REQUIRED=1)
  fi
  if [ -n "${HS_CORE_PATTERN_LOCK:-}" ] && [ -f "$HS_CORE_PATTERN_LOCK" ]; then
    mkdir -p "$root/run/hangscan-host" && touch "$root/run/hangscan-host/core_pattern.lock"
    mount --bind "$HS_CORE_PATTERN_LOCK" "$root/run/hangscan-host/core_pattern.lock"
    envs+=(HS_CORE_PATTERN_LOCK=/run/hangscan-host/core_pattern.lock)
  fi
  # Debian sid's python3.14 (unpacked by test_roots, below): its tests run it under chroot there.
  if [ -x "$root$PY314_DIR/usr/bin/python3.14" ] && mount --rbind /proc "$root$PY314_DIR/proc"; then
    envs+=("HS_PY314_ROOT=$PY314_DIR")
  fi
  exec chroot "$root" /usr/bin/env -i "${envs[@]}" /bin/bash -c "$cmd"
fi

package=0 keep=0 run_cmd=
while [ $# -gt 0 ]; do
  case $1 in
    --package) package=1 ;;
    --keep) keep=1 ;;
    --run) [ $# -ge 2 ] || set -- --usage; run_cmd=$2; shift ;;
    *) echo "usage: tools/fresh-machine.sh [--package] [--keep] [--run 'CMD']" >&2; exit 64 ;;
  esac
  shift
done

say() { echo "fresh-machine: $*"; }
now() { date +%s; }
mins() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
took() { mins $(( $(now) - $1 )); }
# CPU seconds (user + system) of everything this script has waited for so far: with the wall
# time it tells a slow machine from a busy one.
# (`times` writes to a file: in a pipe or $(...) it would run in a subshell, which has no children.)
children_cpu() {
  times >"$work/times"
  awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$work/times"
}
cannot() {
  say "CANNOT MAKE A FRESH ROOT HERE: $*"
  exit $EX_NOROOT
}

# ---- what can be done here ------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || cannot "needs root (mmdebstrap, mount and chroot)"
head=$(git -C "$src" rev-parse HEAD 2>/dev/null) || cannot "$src is not a git checkout"
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  say "note: uncommitted changes in $src are not part of the check (it clones HEAD $head)"
fi
unshare --mount true 2>/dev/null || cannot "no mount namespace (unshare --mount failed)"
if ! command -v mmdebstrap >/dev/null; then
  say "installing mmdebstrap on this machine"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null 2>&1; }; } ||
    cannot "mmdebstrap is not installed and apt-get could not install it"
fi

mirrors=${HS_FRESH_MIRRORS:-"deb http://deb.debian.org/debian bookworm main;deb http://deb.debian.org/debian bookworm-updates main;deb http://deb.debian.org/debian-security bookworm-security main"}
IFS=';' read -r -a mirror_lines <<<"$mirrors"
work=$(mktemp -d "${HS_FRESH_DIR:-/var/tmp}/hangscan-fresh.XXXXXX")
roots=()
phase_pid=

# Processes whose root directory is one of ours: anything a test or a package left running.
root_processes() {
  local root
  for root in "${roots[@]}"; do   # one find, not one readlink per process: fast on a busy machine
    # (find complains, and fails, about processes that exit while it looks: not an error here)
    { find /proc/[0-9]*/root -maxdepth 0 \( -lname "$root" -o -lname "$root/*" \) -printf '%h\n' 2>/dev/null || true; } |
      cut -d/ -f3
  done
  return 0
}

stop_leftovers() {
  local pids pid
  pids=$(root_processes)
  [ -z "$pids" ] && return 0
  for pid in $pids; do
    say "WARNING: left running in the root: pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)): stopping it"
  done
  kill -TERM $pids 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ -z "$(root_processes)" ] && return 0
    sleep 0.5
  done
  pids=$(root_processes)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
  sleep 0.5
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "$phase_pid" ]; then   # mmdebstrap, or a phase's tee
    kill -TERM "$phase_pid" 2>/dev/null || true
    wait "$phase_pid" 2>/dev/null || true
  fi
  stop_leftovers
  # The mounts were made in the phases' own namespaces; none may be visible here.
  if grep -q " $work/" /proc/self/mountinfo; then
    say "WARNING: mounts under $work are visible here; unmounting them"
    grep " $work/" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l || true
  fi
  if [ "$keep" = 1 ]; then
    say "kept: ${roots[*]}"
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# run_in ROOT LOG CMD: CMD (a bash line) inside ROOT, output to LOG and, through tail, to stdout;
# returns its status. In the background, so that a signal to this script is handled at once
# (cleanup then stops every process inside the roots, which ends the phase and its mount
# namespace). The phase ends when CMD ends: a process it left running (holding its output open
# or not) does not keep the check waiting; it is reported and stopped.
run_in() {
  local root=$1 log=$2 cmd=$3 rc=0 tail_pid
  : >"$log"  # made here, so tail finds it even before the phase's redirection runs
  unshare --mount --propagation private -- "$self" --enter "$root" "$cmd" >"$log" 2>&1 </dev/null &
  phase_pid=$!
  tail -n +1 -f --pid="$phase_pid" "$log" &
  tail_pid=$!
  wait "$phase_pid" || rc=$?
  phase_pid=
  wait "$tail_pid" 2>/dev/null || true
  stop_leftovers
  return "$rc"
}

make_root() {
  local root=$1 include=$2 t0
  t0=$(now)
  # In a private mount namespace too: mmdebstrap mounts /proc, /sys and /dev into the root while
  # it installs, and those mounts must not outlive it if this script is killed.
  # In the background, like the phases, so that a signal is handled at once.
  # mmdebstrap's eatmydata hook: no fsync while the root is made (it is removed from the root
  # at the end, so the root is the same; only its making is faster).
  local rc=0 hooks=()
  [ -d /usr/share/mmdebstrap/hooks/eatmydata ] && hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata)
  unshare --mount --propagation private -- mmdebstrap --quiet --variant=minbase "${hooks[@]}" --include="$include" \
    --aptopt='Acquire::Check-Valid-Until "false"' bookworm "$root" "${mirror_lines[@]}" >"$root.log" 2>&1 &
  phase_pid=$!
  wait "$phase_pid" || rc=$?
  phase_pid=
  [ "$rc" -eq 0 ] || { tail -20 "$root.log"; cannot "mmdebstrap failed (no registry?): $root.log"; }
  roots+=("$root")
  # A policy like this machine's: package installs start no services (the tests start their own).
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod 755 "$root/usr/sbin/policy-rc.d"
  for f in resolv.conf hosts hostname; do
    [ -e "/etc/$f" ] && cp -L "/etc/$f" "$root/etc/$f"
  done
  say "root $root made in $(took "$t0")"
}

first_failure=
fail_once() { [ -n "$first_failure" ] || first_failure=$1; }

# The Debian 11 and 13 roots the tarball's tests unpack it into (test_dist.py: the same suites,
# packages and file names), Debian sid's with python3.14 (a real CPython 3.14 for the Python
# tests, HS_PY314_ROOT) and the container tests' image root (test_containers.py), made once on
# this machine with mmdebstrap and kept in its cache (HS_TEST_ROOTS, default
# /var/cache/hangscan-tests), then bound read-only into the new root; the
# sid one is unpacked into it (its tests write their programs there). Why here: inside the chroot
# mmdebstrap and a private mount namespace cannot run. A root that cannot be made is said; its
# tests then skip and say so (the container tests fail). (sid's Release file is often expired:
# apt is told not to check.)
test_roots() {
  local cache=${HS_TEST_ROOTS:-/var/cache/hangscan-tests} entry suite pkgs tar t0 rc what after
  mkdir -p "$cache"
  # The container tests' image root too (suite and packages from tests/integration/
  # container-image.txt; test_containers.py names its file with the dots made underscores).
  local image
  read -r -a image < "$src/tests/integration/container-image.txt"
  local container_pkgs
  container_pkgs=$(IFS=,; echo "${image[*]:1}")
  for entry in bullseye:python3,python3-venv trixie:python3 sid:python3.14 "${image[0]}:$container_pkgs"; do
    suite=${entry%%:*} pkgs=${entry#*:}
    tar=$cache/$suite-essential-${pkgs//,/-}.tar
    [ "$pkgs" = "$container_pkgs" ] && tar=$cache/$suite-essential-$(echo "${pkgs//,/-}" | tr . _).tar
    [ -f "$tar" ] && continue
    t0=$(now) rc=0
    unshare --mount --propagation private -- mmdebstrap --quiet --variant=essential --include="$pkgs" \
      --aptopt='Acquire::Check-Valid-Until "false"' "$suite" "$tar.tmp.tar" >"$work/$suite.log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
      mv "$tar.tmp.tar" "$tar" && say "test root $suite made in $(took "$t0") ($tar)"
    else
      rm -f "$tar.tmp.tar"
      what="the tarball's" after="they will skip"; [ "$suite" = sid ] && what="the Python 3.14"
      [ "$pkgs" = "$container_pkgs" ] && what="the container and Kubernetes" after="they will fail"
      say "note: no $suite root for $what tests (mmdebstrap: $(tail -1 "$work/$suite.log")); $after"
    fi
  done
  export HS_TEST_ROOTS=$cache
  tar=$cache/sid-essential-python3.14.tar t0=$(now)
  if [ -f "$tar" ] && mkdir -p "$root1$PY314_DIR" && tar -xf "$tar" -C "$root1$PY314_DIR"; then
    say "python3.14 root unpacked into $PY314_DIR in $(took "$t0") (HS_PY314_ROOT)"
  else
    say "note: no python3.14 root in the new root; the Python 3.14 tests will skip"
  fi
}

# ---- the new machine ------------------------------------------------------------------------
t_all=$(now)
say "checking commit $head on a new Debian 12 root (under $work)"
root1=$work/root
make_root "$root1" git,make,ca-certificates
if [ "$package" = 1 ]; then
  # The package's root: a copy of this one before anything else is installed (the same as a
  # second mmdebstrap run, in seconds instead of minutes).
  cp -a "$root1" "$work/pkgroot"
fi
t_root=$(( $(now) - t_all ))

t_clone=$(now)
git clone -q --no-hardlinks "$src" "$root1/home/hangscan" && git -C "$root1/home/hangscan" checkout -q --detach "$head" ||
  cannot "git clone of $src into the root failed"
say "cloned into /home/hangscan in $(took "$t_clone")"

# phase LOG CMD: CMD in the clone inside the first root; sets phase_rc and phase_time.
phase() {
  local t cpu
  say "---- $2 ----"
  t=$(now)
  children_cpu >"$work/cpu"   # not in $(...), for the same reason
  cpu=$(<"$work/cpu")
  phase_rc=0
  run_in "$root1" "$1" "cd /home/hangscan && $2" || phase_rc=$?
  children_cpu >"$work/cpu"
  phase_time="$(took "$t") (CPU $(mins $(( $(<"$work/cpu") - cpu ))))"
}

test_roots
if [ -n "$run_cmd" ]; then
  phase "$work/run.log" "$run_cmd"
  say "exit $phase_rc in $phase_time"
  exit "$phase_rc"
fi

phase "$work/demo.log" "make demo"
demo_rc=$phase_rc demo_time=$phase_time
demo_from_clone=$(took "$t_clone")
if [ "$demo_rc" -ne 0 ]; then
  fail_once "make demo exited $demo_rc: $(grep -v '^\s*$' "$work/demo.log" | tail -1)"
fi
say "make demo: exit $demo_rc in $demo_time ($demo_from_clone from the clone, packages included)"
# The binary a new user gets from `make demo` records with eBPF (issue 37): doctor loads it.
if [ "$demo_rc" -eq 0 ]; then
  if run_in "$root1" "$work/ebpf.log" "/home/hangscan/build/hangscan doctor | grep '^ok   ebpf'"; then
    say "make demo's binary: eBPF recorder loads"
  else
    fail_once "make demo's binary has no working eBPF recorder: $(tail -1 "$work/ebpf.log")"
  fi
fi

package_summary=
if [ "$package" = 1 ]; then
  say "---- make deb, then the package on a second new root ----"
  t_pkg=$(now)
  pkg_rc=0
  run_in "$root1" "$work/deb.log" \
    "cd /home/hangscan && make deb >/tmp/deb.log 2>&1 || { tail -30 /tmp/deb.log; exit 1; }
     cmake --build build --target prog_deadlock >/dev/null && ls build/hangscan_*.deb" || pkg_rc=$?
  if [ "$pkg_rc" -eq 0 ]; then
    deb=$(ls "$root1"/home/hangscan/build/hangscan_*.deb | head -1)
    root2=$work/pkgroot
    roots+=("$root2")
    cp "$deb" "$root2/tmp/" && cp "$root1/home/hangscan/build/programs/deadlock" "$root2/tmp/deadlock"
    debname=$(basename "$deb")
    run_in "$root2" "$work/pkg.log" "set -e
      apt-get update -qq && apt-get install -y -qq --no-install-recommends man-db /tmp/$debname >/dev/null
      echo 'package: installed; Depends:' \$(dpkg-query -W -f='\${Depends}' hangscan)
      v=\$(hangscan --version); echo \"package: \$v\"
      case \$v in 'hangscan '*' (commit ${head:0:12})') ;; *) echo 'package: wrong --version'; exit 1 ;; esac
      man -P cat hangscan 2>/dev/null | grep -q 'hangscan dump' || { echo 'package: man hangscan shows no page'; exit 1; }
      echo 'package: man hangscan: ok'
      [ -f /usr/share/bash-completion/completions/hangscan ] || { echo 'package: no bash completion'; exit 1; }
      mkfifo /tmp/ready; /tmp/deadlock /tmp/ready & pid=\$!
      read -r -t 30 line </tmp/ready; [ \"\$line\" = ready ] || { echo 'package: test program not ready'; exit 1; }
      rc=0; hangscan dump --pid \$pid >/tmp/dump.txt 2>&1 || rc=\$?; kill -KILL \$pid
      sed 's/^/package: | /' /tmp/dump.txt
      grep -q lock_second /tmp/dump.txt || { echo \"package: the dump (exit \$rc) shows no lock_second\"; exit 1; }
      echo \"package: hangscan dump of a deadlocked test program: exit \$rc\"" ||
      pkg_rc=$?
  fi
  package_summary="package check: exit $pkg_rc in $(took "$t_pkg")"
  [ "$pkg_rc" -eq 0 ] || fail_once "package check failed (exit $pkg_rc): $(tail -1 "$work/pkg.log" 2>/dev/null || tail -1 "$work/deb.log")"
  say "$package_summary"
fi

phase "$work/test.log" "make test"
test_rc=$phase_rc test_time=$phase_time
if [ "$test_rc" -ne 0 ]; then
  failed=$(sed -n '/The following tests FAILED:/{n;p;q}' "$work/test.log" | sed 's/^\s*//')
  fail_once "make test exited $test_rc${failed:+: first failed test: $failed}"
  [ -n "$failed" ] || fail_once "make test exited $test_rc: $(grep -v '^\s*$' "$work/test.log" | tail -1)"
fi

echo
say "root $(( t_root / 60 ))m$(printf '%02d' $(( t_root % 60 )))s; make demo $demo_time (report $demo_from_clone from the clone); ${package_summary:+$package_summary; }make test $test_time; all $(took "$t_all")"
say "first failure: ${first_failure:-none}"
say "make test ended with:"
# ctest's closing summary, again, so it is the last thing printed.
sed -n '/tests passed, /,$p' "$work/test.log"
if [ "$test_rc" -eq 0 ] && [ -n "$first_failure" ]; then exit 1; fi
exit "$test_rc"
}
