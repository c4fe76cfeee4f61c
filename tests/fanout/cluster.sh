#!/usr/bin/env bash
# A real Slurm 22.05 cluster of three nodes (n1 n2 n3; HS_SLURM_NODES=N for n1..nN) on this one
# machine, for the multi-node tests of hangscan and for trying `hangscan --slurm-job` by hand.
#
#   cluster.sh start DIR    write DIR/slurm.conf, start munged, slurmctld and one slurmd a node,
#                           wait (deadline) until every node is idle; prints `export SLURM_CONF=...`
#   cluster.sh stop DIR     cancel every job, stop every daemon this script started (by the pid
#                           recorded in DIR/pids), and any slurmstepd still serving DIR
#   cluster.sh status DIR   daemons alive or not, and sinfo
#
# Opt-in (off by default: they cost start-up time and most tests need neither):
#   HS_SLURM_ACCOUNTING=1   a MariaDB server (its own datadir, socket and port under DIR) and
#                           slurmdbd, so sacct answers; `stop` stops both and removes the data.
#   HS_SLURM_CGROUP=1       task/cgroup with ConstrainRAMSpace (cgroup v1): a step's --mem is a
#                           memory cgroup limit, and a step whose task the OOM killer hit ends
#                           OUT_OF_MEMORY. Slurm's cgroups are slurm_hs<PORT>_<node> under each
#                           v1 controller; `stop` removes them.
#   Either makes job ids start at the cluster's port base (FirstJobId): all "nodes" of every test
#   cluster on this machine share one pid namespace and one kernel log, and a job 1 of another
#   cluster running at the same time would otherwise be taken for ours (tasks, Slurm cgroups).
#
# Why this shape: everything lives under DIR (munge socket and key, state, spool, logs, pids)
# so two clusters or a stray system install never collide; daemons run in the foreground in
# their own sessions so the pid we record is the daemon itself, and stop never kills by name.
# Ports: HS_SLURM_PORT_BASE, or the first free block of N+1 from a pid-derived start. `stop` and
# `status` read the node count back from DIR/slurm.conf.
# Facts behind the settings: ../../shared/field-notes.md §7 (SlurmdParameters=config_overrides,
# proctrack/linuxproc, task/none, AuthInfo=socket=...).
set -euo pipefail

usage() { echo "usage: $0 start|stop|status DIR" >&2; exit 64; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# munged runs as user munge and must reach DIR/munge (mkdtemp makes DIR 0700).
chmod go+rx "$dir"
conf=$dir/slurm.conf
pids=$dir/pids
# The node count: HS_SLURM_NODES at start, then whatever DIR/slurm.conf says (stop, status).
node_count() {
  local n
  n=$(sed -n 's/^# nodes: //p' "$conf" 2>/dev/null)
  [ -n "$n" ] && [ "$cmd" != start ] && { echo "$n"; return; }
  n=${HS_SLURM_NODES:-3}
  case "$n" in ''|*[!0-9]*) log "HS_SLURM_NODES must be a number, not '$n'"; exit 64 ;; esac
  [ "$n" -ge 1 ] && [ "$n" -le 256 ] || { log "HS_SLURM_NODES must be 1-256, not $n"; exit 64; }
  echo "$n"
}
# An opt-in read at start, then from DIR/slurm.conf ("# accounting: 1").
opt_on() {
  local v
  if [ "$cmd" = start ]; then v=${!2:-0}; else v=$(sed -n "s/^# $1: //p" "$conf" 2>/dev/null); fi
  [ "$v" = 1 ]
}
nodes=()
start_deadline_s=${HS_SLURM_START_TIMEOUT:-60}
stop_deadline_s=${HS_SLURM_STOP_TIMEOUT:-15}

log() { echo "cluster.sh: $*" >&2; }
for ((i = 1; i <= $(node_count); i++)); do nodes+=("n$i"); done

port_free() {
  ! ss -Htan "( sport = :$1 )" 2>/dev/null | grep -q .
}

# True when ports $1..$1+$2 are all free.
block_free() {
  local p
  for ((p = $1; p <= $1 + $2; p++)); do port_free "$p" || return 1; done
}

# First base port with base..base+N all free (slurmctld + N slurmd; + slurmdbd and MariaDB
# with accounting).
choose_ports() {
  if [ -n "${HS_SLURM_PORT_BASE:-}" ]; then
    echo "$HS_SLURM_PORT_BASE"
    return
  fi
  local n=${#nodes[@]}
  opt_on accounting HS_SLURM_ACCOUNTING && n=$((n + 2))
  local base=$((20000 + ($$ * 7) % 20000))
  local tries=0
  while [ $tries -lt 200 ]; do
    if block_free $base "$n"; then
      echo $base
      return
    fi
    base=$((base + n + 1))
    [ $base -gt 60000 ] && base=20000
    tries=$((tries + 1))
  done
  log "no free block of $((n + 1)) TCP ports found"
  exit 1
}

# Starts "$@" in its own session with output to $log_file and records "name pid".
# Non-interactive bash puts background jobs in its own process group, so setsid does not fork
# and $! is the daemon itself.
start_daemon() {
  local name=$1 log_file=$2
  shift 2
  setsid "$@" </dev/null >>"$log_file" 2>&1 &
  echo "$name $!" >>"$pids"
}

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

write_conf() {
  local base=$1 host
  host=$(hostname -s)
  local n=${#nodes[@]}
  local acct=0 cg=0 dbd_port=$((base + n + 1))
  opt_on accounting HS_SLURM_ACCOUNTING && acct=1
  opt_on cgroup HS_SLURM_CGROUP && cg=1
  cat >"$conf" <<EOF
# Written by hangscan tests/fanout/cluster.sh; a private test cluster, not for production.
# nodes: ${n}
# accounting: ${acct}
# cgroup: ${cg}
ClusterName=hstest
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${base}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${dir}/munge/munge.socket
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool/%n
SlurmctldPidFile=${dir}/run/slurmctld.pid
SlurmdPidFile=${dir}/run/slurmd-%n.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
$([ $cg = 1 ] && echo TaskPlugin=task/cgroup || echo TaskPlugin=task/none)
SelectType=select/cons_tres
SelectTypeParameters=$([ $cg = 1 ] && echo CR_Core_Memory || echo CR_Core)
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
$(if [ $acct = 1 ]; then
    echo "AccountingStorageType=accounting_storage/slurmdbd"
    echo "AccountingStorageHost=127.0.0.1"
    echo "AccountingStoragePort=${dbd_port}"
    # Clients reach slurmdbd with the munge socket named here, not AuthInfo's (22.05).
    echo "AccountingStoragePass=${dir}/munge/munge.socket"
  else
    echo "AccountingStorageType=accounting_storage/none"
  fi)
JobCompType=jobcomp/none
ReturnToService=2
MessageTimeout=5
SlurmdTimeout=300
KillWait=2
InactiveLimit=0
MinJobAge=2
$([ $acct = 1 ] || [ $cg = 1 ] && echo "FirstJobId=${base}")
NodeName=n[1-${n}] NodeHostname=${host} NodeAddr=127.0.0.1 Port=$((base + 1))-$((base + n)) CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-${n}] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
}

start_munge() {
  local md=$dir/munge
  mkdir -p "$md"
  if [ ! -s "$md/munge.key" ]; then
    dd if=/dev/urandom of="$md/munge.key" bs=1024 count=1 status=none
  fi
  chown -R munge:munge "$md"
  chmod 755 "$md"
  chmod 600 "$md/munge.key"
  start_daemon munged "$dir/log/munged.out" \
    setpriv --reuid munge --regid munge --init-groups \
    munged -F --socket="$md/munge.socket" --key-file="$md/munge.key" \
    --pid-file="$md/munged.pid" --log-file="$md/munged.log" --seed-file="$md/munged.seed"
  local deadline=$((SECONDS + 10))
  while [ ! -S "$md/munge.socket" ]; do
    [ $SECONDS -ge $deadline ] && { log "munged did not create its socket (see $md/munged.log)"; return 1; }
    sleep 0.05
  done
}

# cgroup.conf next to slurm.conf (Slurm reads it from there).
write_cgroup_conf() {
  cat >"$dir/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
EOF
}

# MariaDB as a plain process: its own datadir, socket and TCP port under DIR (slurmdbd speaks
# TCP only), a user for slurmdbd, then slurmdbd itself and the cluster registered in it.
start_accounting() {
  local db_port=$1 dbd_port=$2 db=$dir/db
  rm -rf "$db"
  mkdir -p "$db"
  mariadb-install-db --no-defaults --datadir="$db" --user=root --auth-root-authentication-method=socket \
    --skip-test-db >"$dir/log/mariadb-install.log" 2>&1 || { log "mariadb-install-db failed (see $dir/log/mariadb-install.log)"; return 1; }
  start_daemon mariadbd "$dir/log/mariadbd.out" mariadbd --no-defaults --datadir="$db" --user=root \
    --socket="$dir/run/mysql.sock" --port="$db_port" --bind-address=127.0.0.1 --skip-name-resolve \
    --pid-file="$dir/run/mariadbd.pid" --log-error="$dir/log/mariadbd.log" --innodb-buffer-pool-size=16M
  local deadline=$((SECONDS + 30))
  until mariadb --no-defaults --socket="$dir/run/mysql.sock" -e 'select 1' >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && { log "mariadbd not up after 30s (see $dir/log/mariadbd.log)"; return 1; }
    alive "$(pid_of mariadbd)" || { log "mariadbd died (see $dir/log/mariadbd.log)"; return 1; }
    sleep 0.1
  done
  mariadb --no-defaults --socket="$dir/run/mysql.sock" -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'hstest'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';"
  (umask 077; cat >"$dir/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=${dir}/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=${dbd_port}
SlurmUser=root
DebugLevel=info
LogFile=${dir}/log/slurmdbd.log
PidFile=${dir}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=${db_port}
StorageUser=slurm
StoragePass=hstest
StorageLoc=hs_acct_db
EOF
)
  start_daemon slurmdbd "$dir/log/slurmdbd.out" env SLURM_CONF="$conf" slurmdbd -D
  deadline=$((SECONDS + 30))
  until SLURM_CONF=$conf sacctmgr -i add cluster hstest >/dev/null 2>&1 ||
        SLURM_CONF=$conf sacctmgr -n list cluster format=cluster 2>/dev/null | grep -q hstest; do
    [ $SECONDS -ge $deadline ] && { log "slurmdbd not answering after 30s (see $dir/log/slurmdbd.log)"; return 1; }
    alive "$(pid_of slurmdbd)" || { log "slurmdbd died (see $dir/log/slurmdbd.log)"; return 1; }
    sleep 0.2
  done
}

nodes_idle() {
  local states
  states=$(SLURM_CONF=$conf sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
  [ "$(echo "$states" | grep -c ' idle$')" -eq ${#nodes[@]} ]
}

do_start() {
  if [ -s "$pids" ]; then
    log "$dir already has a cluster (pids file exists); stop it first"
    exit 1
  fi
  rm -rf "$dir/state" "$dir/spool" "$dir/run"
  mkdir -p "$dir/state" "$dir/run" "$dir/log"
  for n in "${nodes[@]}"; do mkdir -p "$dir/spool/$n"; done
  : >"$pids"
  local base
  base=$(choose_ports)
  write_conf "$base"
  opt_on cgroup HS_SLURM_CGROUP && write_cgroup_conf
  start_munge
  if opt_on accounting HS_SLURM_ACCOUNTING; then
    start_accounting $((base + ${#nodes[@]} + 2)) $((base + ${#nodes[@]} + 1))
  fi
  start_daemon slurmctld "$dir/log/slurmctld.out" slurmctld -D -i -f "$conf"
  for n in "${nodes[@]}"; do
    start_daemon "slurmd-$n" "$dir/log/slurmd-$n.out" slurmd -D -f "$conf" -N "$n"
  done
  local deadline=$((SECONDS + start_deadline_s))
  until nodes_idle; do
    if [ $SECONDS -ge $deadline ]; then
      log "nodes not idle after ${start_deadline_s}s:"
      SLURM_CONF=$conf sinfo -N >&2 || true
      tail -n 5 "$dir"/log/*.log >&2 || true
      exit 1
    fi
    while read -r name pid; do
      alive "$pid" || { log "$name (pid $pid) died during start; see $dir/log"; tail -n 20 "$dir/log/$name.out" >&2 || true; exit 1; }
    done <"$pids"
    sleep 0.1
  done
  log "cluster up: $(echo "${nodes[@]}") idle, slurmctld port $base"
  echo "export SLURM_CONF=$conf"
}

# slurmstepd daemonizes away from slurmd; the ones serving this cluster keep a socket or a
# file open under DIR/spool, which is how they are found (by pid, never by name).
stepd_pids() {
  local p fd
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
    for fd in "$p"/fd/*; do
      case "$(readlink "$fd" 2>/dev/null)" in
        "$dir"/*) echo "${p#/proc/}"; break ;;
      esac
    done
  done
}

# Every descendant of the given pids (job tasks under slurmstepd, with proctrack/linuxproc).
descendants() {
  local frontier="$*" next p pp all=""
  while [ -n "$frontier" ]; do
    next=""
    for p in /proc/[0-9]*; do
      pp=$(awk '{print $4}' "$p/stat" 2>/dev/null) || continue
      for f in $frontier; do
        [ "$pp" = "$f" ] && next="$next ${p#/proc/}"
      done
    done
    all="$all$next"
    frontier=$next
  done
  echo "$all"
}

# Sends TERM to the pids, waits up to $1 seconds, then KILLs what is left.
terminate() {
  local secs=$1 pid left
  shift
  [ $# -eq 0 ] && return 0
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  local deadline=$((SECONDS + secs))
  while :; do
    left=""
    for pid in "$@"; do alive "$pid" && left="$left $pid"; done
    [ -z "$left" ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      log "killing (deadline passed):$(for pid in $left; do printf ' %s(%s)' "$pid" "$(cat /proc/$pid/comm 2>/dev/null)"; done)"
      for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
      return 0
    fi
    sleep 0.1
  done
}

# The cgroups task/cgroup made for this cluster's nodes (HS_SLURM_CGROUP), deepest first; a
# cgroup that still holds a process is left and said.
remove_slurm_cgroups() {
  opt_on cgroup HS_SLURM_CGROUP || return 0
  local n d
  for n in "${nodes[@]}"; do
    for d in $(find /sys/fs/cgroup/*/ -maxdepth 1 -type d -name "slurm_${n}" 2>/dev/null); do
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [ -d "$d" ] && log "could not remove $d (still in use)"
    done
  done
  return 0
}

pid_of() { awk -v n="$1" '$1 == n {print $2}' "$pids" 2>/dev/null; }

do_stop() {
  [ -f "$conf" ] || { log "no cluster in $dir"; exit 0; }
  [ -s "$pids" ] || { log "no daemons recorded in $dir"; exit 0; }
  # Jobs first, so slurmd cleans up its own steps; a node whose slurmd is gone cannot, so
  # whatever still runs under our slurmstepds is killed directly afterwards.
  if alive "$(pid_of slurmctld)"; then
    SLURM_CONF=$conf timeout 10 scancel --quiet --user=root 2>/dev/null || true
    local deadline=$((SECONDS + 5))
    while [ -n "$(SLURM_CONF=$conf timeout 5 squeue -h -t R,CG,PD -o %i 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do
      sleep 0.2
    done
  fi
  local stepds tasks
  stepds=$(stepd_pids)
  if [ -n "$stepds" ]; then
    tasks=$(descendants $stepds)
    for pid in $tasks; do kill -KILL "$pid" 2>/dev/null || true; done
  fi
  local daemons=()
  for name in "${nodes[@]/#/slurmd-}" slurmctld; do
    pid=$(pid_of "$name")
    [ -n "$pid" ] && daemons+=("$pid")
  done
  # shellcheck disable=SC2086
  terminate 3 $stepds
  terminate "$stop_deadline_s" "${daemons[@]}"
  local pid
  for name in slurmdbd mariadbd; do
    pid=$(pid_of "$name")
    [ -n "$pid" ] && terminate "$stop_deadline_s" "$pid"
  done
  rm -rf "$dir/db"
  remove_slurm_cgroups
  local munged_pid
  munged_pid=$(pid_of munged)
  [ -n "$munged_pid" ] && terminate 5 "$munged_pid"
  rm -f "$pids"
  log "cluster in $dir stopped"
}

do_status() {
  [ -s "$pids" ] || { echo "no cluster running in $dir"; exit 3; }
  local name pid rc=0
  while read -r name pid; do
    if alive "$pid"; then echo "$name pid $pid running"; else echo "$name pid $pid dead"; rc=1; fi
  done <"$pids"
  SLURM_CONF=$conf timeout 10 sinfo -N || rc=1
  exit $rc
}

case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  *) usage ;;
esac
