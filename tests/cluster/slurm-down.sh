#!/usr/bin/env bash
# Stop the one-node SLURM cluster that tests/cluster/slurm-up.sh started in DIR.
#
#   sudo tests/cluster/slurm-down.sh [--purge] [DIR]    # DIR: default /tmp/noisyor-bench-slurm
#
# Cancels the cluster's jobs still queued or running (and waits for them to end), then stops
# exactly the daemons listed in DIR/pids (slurmd, slurmctld, munged: SIGTERM, SIGKILL after
# 20 s), each only if that pid still runs that program with DIR on its command line, and
# removes the link /run/slurm/conf (and /run/slurm) if slurm-up.sh made them (DIR/created).
# Nothing else is stopped or removed: the configuration, logs and job completion log stay in
# DIR. With --purge, also removes (apt-get purge) the packages slurm-up.sh installed
# (DIR/installed), leaving the machine's packages as they were: while SLURM's commands are
# installed, `noisyor-bench check-cluster` runs `sinfo`, which fails without a cluster. Exit status
# 1 if a daemon could not be stopped.
set -euo pipefail

purge=false
if [ "${1:-}" = --purge ]; then
    purge=true
    shift
fi
dir=${1:-${NOISYOR_SLURM_DIR:-/tmp/noisyor-bench-slurm}}
[ -d "$dir" ] && dir=$(cd "$dir" && pwd)
purge_packages() {
    if $purge && [ -s "$dir/installed" ]; then
        echo "removing the packages slurm-up.sh installed: $(tr '\n' ' ' <"$dir/installed")"
        # shellcheck disable=SC2046  # one package a word
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $(cat "$dir/installed") >>"$dir/apt.log" 2>&1
        rm "$dir/installed"
    fi
}
if [ ! -s "$dir/pids" ] && [ ! -s "$dir/created" ]; then
    echo "no SLURM started in $dir (no $dir/pids): nothing to stop"
    purge_packages
    exit 0
fi

ours() {  # ours NAME PID: the pid runs NAME with DIR on its command line
    local cmd
    cmd=$(tr '\0' ' ' <"/proc/$2/cmdline" 2>/dev/null) || return 1
    [[ $cmd == *"$1"* && $cmd == *"$dir/"* ]]
}

# Jobs first: a job step (slurmstepd) outlives slurmd unless its job ends.
if ours slurmctld "$(awk '$1 == "slurmctld" {print $2}' "$dir/pids")"; then
    export SLURM_CONF=$dir/slurm.conf
    jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
        echo "cancelling jobs: $(echo "$jobs" | tr '\n' ' ')"
        # shellcheck disable=SC2086  # one job id a word
        scancel $jobs || true
        for _ in $(seq 60); do
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.5
        done
    fi
fi

status=0
for name in slurmd slurmctld munged; do
    pid=$(awk -v n="$name" '$1 == n {print $2}' "$dir/pids")
    [ -n "$pid" ] || continue
    if ! ours "$name" "$pid"; then
        echo "$name ($pid): not running"
        continue
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 40); do
        ours "$name" "$pid" || break
        sleep 0.5
    done
    if ours "$name" "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        sleep 0.5
    fi
    if ours "$name" "$pid"; then
        echo "$name ($pid): could not be stopped" >&2
        status=1
    else
        echo "$name ($pid): stopped"
    fi
done
if [ "$status" = 0 ]; then
    rm -f "$dir/pids"
    if grep -qx "link /run/slurm/conf" "$dir/created" 2>/dev/null && [ "$(readlink /run/slurm/conf)" = "$dir" ]; then
        rm /run/slurm/conf
    fi
    if grep -qx "dir /run/slurm" "$dir/created" 2>/dev/null; then
        rmdir /run/slurm 2>/dev/null || true
    fi
    rm -f "$dir/created"
    purge_packages
fi
exit "$status"
