#!/usr/bin/env bash
# Start a one-node SLURM cluster on this machine, for trying the cluster path
# (profiles/slurm) and for tests/cluster/test_slurm_smoke.py.
#
#   sudo tests/cluster/slurm-up.sh [DIR]    # DIR: default /tmp/noisyor-bench-slurm
#   export SLURM_CONF=DIR/slurm.conf        # every SLURM command then talks to this cluster
#   ...                                      # sbatch, squeue, snakemake --workflow-profile profiles/slurm
#   sudo tests/cluster/slurm-down.sh [DIR]
#
# As root: installs the Debian packages slurmctld, slurmd, slurm-client and munge if a binary
# is missing (apt-get), writes slurm.conf for one node named localhost with this machine's CPUs
# and memory (slurmd -C; partitions debug, the default, without a time limit and day with a MaxTime
# of 24 h) into DIR, and starts munged, slurmd and slurmctld from DIR: its own
# munge key and socket, non-default ports, state, spool, logs (DIR/log) and the pids it started
# (DIR/pids, read by slurm-down.sh). Apart from the packages nothing under /etc is read or
# written, so a munge already on the machine is left alone. Commands find the cluster through
# SLURM_CONF, except inside a job, where the executor plugin's job step drops every SLURM_*
# variable before calling srun: there srun reads SLURM's fallback path
# /run/slurm/conf/slurm.conf, a link to DIR made here (removed by slurm-down.sh), so this refuses
# to start where /etc/slurm/slurm.conf or /run/slurm/conf exists (a SLURM of the machine's own).
# No cgroups (proctrack/linuxproc, task/none) and no accounting database: `sacct` is
# unavailable, job states come from `squeue --states=all` (finished jobs stay listed for
# MinJobAge = 1 h) and each finished job is appended to DIR/jobcomp.log. Waits until `sinfo`
# shows the node idle, then prints the export line.
#
# Exit status: 0 the cluster is up; 2 it cannot be started here (not root, no apt-get, the
# packages cannot be installed, a SLURM configuration of the machine's own, a cluster of this
# script already running), with one line "cannot start SLURM: <reason>" on stderr; 1 a daemon
# failed to start (what was started is stopped again, the logs' tails are printed).
set -euo pipefail

dir=${1:-${NOISYOR_SLURM_DIR:-/tmp/noisyor-bench-slurm}}
ctld_port=${NOISYOR_SLURM_CTLD_PORT:-16817}
slurmd_port=${NOISYOR_SLURM_SLURMD_PORT:-16818}
here=$(cd "$(dirname "$0")" && pwd)

cannot() {
    echo "cannot start SLURM: $*" >&2
    exit 2
}

[ "$(id -u)" = 0 ] || cannot "not root (the daemons run as root; try sudo)"
alive() {  # alive DIR: a daemon listed in DIR/pids still runs
    local _name pid
    [ -s "$1/pids" ] || return 1
    while read -r _name pid; do
        [ -d "/proc/$pid" ] && ! grep -q '^[^)]*) Z' "/proc/$pid/stat" 2>/dev/null && return 0
    done <"$1/pids"
    return 1
}
# A link left by a cluster of this script whose daemons are gone (a killed test) is stale.
old=$(readlink /run/slurm/conf 2>/dev/null || true)
if [ -n "$old" ] && grep -qx "link /run/slurm/conf" "$old/created" 2>/dev/null; then
    if alive "$old"; then
        [ "$old" = "$(realpath -m "$dir")" ] && msg="it" || msg="another one, in $old"
        cannot "SLURM started by this script is already running ($msg); stop it first: $here/slurm-down.sh $old"
    fi
    echo "removing the stale link /run/slurm/conf -> $old (its daemons are gone)"
    rm /run/slurm/conf
fi
for f in /etc/slurm/slurm.conf /etc/slurm-llnl/slurm.conf /run/slurm/conf; do
    if [ -e "$f" ] || [ -L "$f" ]; then
        cannot "this machine has a SLURM configuration of its own ($f), which jobs would use"
    fi
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if alive "$dir"; then
    cannot "SLURM started by this script is already running in $dir; stop it first: $here/slurm-down.sh $dir"
fi
rm -f "$dir/pids"

# Packages: only when a binary is missing; the index is refreshed only if the first try fails.
need=(slurmctld slurmd sbatch squeue sinfo munged mungekey)
missing=()
for b in "${need[@]}"; do command -v "$b" >/dev/null || missing+=("$b"); done
if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || cannot "no apt-get to install ${missing[*]} (Debian packages slurmctld slurmd slurm-client munge)"
    echo "installing slurmctld slurmd slurm-client munge (apt-get; log: $dir/apt.log)"
    dpkg-query -W -f '${Package}\n' | sort >"$dir/packages.before"
    install() {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            slurmctld slurmd slurm-client munge >>"$dir/apt.log" 2>&1
    }
    if ! install; then
        DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$dir/apt.log" 2>&1 || true
        install || cannot "apt-get install slurmctld slurmd slurm-client munge failed: $(tail -n 1 "$dir/apt.log")"
    fi
    # What this installed, for `slurm-down.sh --purge`.
    dpkg-query -W -f '${Package}\n' | sort | comm -13 "$dir/packages.before" - >"$dir/installed"
    rm "$dir/packages.before"
fi

mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 700 "$dir" "$dir/munge"

# This machine's CPUs and memory as slurmd sees them; 95% of the memory, so that the node's
# measured memory never falls below the configured one.
hw=$(slurmd -C | head -n 1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
if [ -z "$cpus" ] || [ -z "$mem" ]; then cannot "slurmd -C printed no CPUs/RealMemory: $hw"; fi
mem=$((mem * 95 / 100))

cat >"$dir/slurm.conf" <<EOF
# One-node cluster written by $here/slurm-up.sh: node localhost, $cpus CPUs, $mem MB.
ClusterName=noisyor
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups: processes are tracked through /proc, tasks are not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
# No accounting database (sacct unavailable): job states from squeue, finished jobs kept for
# squeue for an hour and appended to the job completion log.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
MinJobAge=3600
# A job past its time limit is killed at once (no grace minutes) and 5 s after SIGTERM (default
# 30 s): SLURM checks the limits every 30 s, so a 1-minute job times out within about 95 s.
OverTimeLimit=0
KillWait=5
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
# The same node under a 24-hour MaxTime, as many clusters' partitions have (check-cluster's test).
PartitionName=day Nodes=localhost Default=NO MaxTime=1-00:00:00 State=UP
EOF

# The pids of the daemons started here, one "name pid" a line, for slurm-down.sh.
: >"$dir/pids"
: >"$dir/created"
start() {  # start NAME COMMAND...: in the foreground of its own session, in the background here
    local name=$1
    shift
    setsid "$@" </dev/null >>"$dir/log/$name.out" 2>&1 &
    echo "$name $!" >>"$dir/pids"
}
fail() {
    echo "SLURM did not come up: $*" >&2
    for f in "$dir"/log/*; do
        echo "--- $f" >&2
        tail -n 15 "$f" >&2
    done
    "$here/slurm-down.sh" "$dir" >&2 || true
    exit 1
}
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local t=$1 what=$2
    shift 2
    for _ in $(seq "$((t * 2))"); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    fail "$what after ${t} s"
}

[ -s "$dir/munge/munge.key" ] || mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null
chmod 600 "$dir/munge/munge.key"
start munged munged --foreground --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log"
wait_for 20 "munged answers no credential" \
    bash -c "munge -n -S '$dir/munge/munge.socket' | unmunge -S '$dir/munge/munge.socket'"

# The configuration where SLURM commands without SLURM_CONF look for it (srun inside a job).
[ -d /run/slurm ] || { mkdir /run/slurm && echo "dir /run/slurm" >>"$dir/created"; }
ln -s "$dir" /run/slurm/conf && echo "link /run/slurm/conf" >>"$dir/created"

export SLURM_CONF=$dir/slurm.conf
start slurmctld slurmctld -D -c -f "$SLURM_CONF"
wait_for 30 "slurmctld answers no ping" bash -c "scontrol ping | grep -q 'is UP'"
start slurmd slurmd -D -N localhost -f "$SLURM_CONF"
wait_for 60 "the node is not idle in sinfo" bash -c "[ \"\$(sinfo -h -n localhost -o %t)\" = idle ]"

echo "SLURM is up: node localhost ($cpus CPUs, $mem MB), partitions debug (default) and day (24 h); pids in $dir/pids"
echo "export SLURM_CONF=$SLURM_CONF"
