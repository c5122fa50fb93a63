#!/usr/bin/env bash
# slurm_down.sh DIR — stop the private cluster started by slurm_up.sh DIR:
# cancel its jobs, stop slurmd/slurmctld/munged (pids from DIR/run), kill any
# slurmstepd or job process still carrying SLURM_CONF=DIR/slurm.conf, then verify
# nothing is left. Safe to run twice or on a half-started DIR. Exit 1 if something survives.
set -uo pipefail

log() { echo "slurm_down: $*" >&2; }
[ $# -eq 1 ] || { log "usage: $0 DIR"; exit 2; }
[ -d "$1" ] || { log "no such dir $1 (nothing to do)"; exit 0; }
DIR=$(cd "$1" && pwd -P)
CONF="$DIR/slurm.conf"
export SLURM_CONF="$CONF"

alive() {  # pid exists and is not a zombie
  local s
  s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}
pidof_file() {  # pid from DIR/run/NAME.pid, only if that pid is still a NAME process (no pid-reuse kills)
  local p; [ -s "$DIR/run/$1.pid" ] || return 1; p=$(cat "$DIR/run/$1.pid")
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] && echo "$p"
}

# our own ancestors (the caller may well have SLURM_CONF exported): never kill those
ANC=" "; p=$$
while [ -n "$p" ] && [ "$p" != 0 ]; do ANC="$ANC$p "; p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null); done
descends_from_us() {  # $1 is this script or one of its subshells/children
  local p=$1 i
  for i in $(seq 64); do
    [ "$p" = "$$" ] && return 0
    p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || return 1
    [ -z "$p" ] || [ "$p" = 0 ] || [ "$p" = 1 ] && return 1
  done
  return 1
}

# processes of this cluster still alive: slurmstepd or job tasks (SLURM_JOB_ID set)
# whose environment has SLURM_CONF=DIR/slurm.conf
stray_pids() {
  local d p
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$ANC" in *" $p "*) continue;; esac
    grep -qzxF "SLURM_CONF=$CONF" "$d/environ" 2>/dev/null || continue
    if [ "$(cat "$d/comm" 2>/dev/null)" != slurmstepd ]; then
      grep -qz '^SLURM_JOB_ID=' "$d/environ" 2>/dev/null || continue
    fi
    descends_from_us "$p" && continue
    alive "$p" && echo "$p"
  done
}

wait_gone() {  # wait_gone SECONDS PID... ; returns 0 when all gone
  local end=$(( $(date +%s) + $1 )); shift
  while :; do
    local left=""
    for p in "$@"; do alive "$p" && left="$left $p"; done
    [ -z "$left" ] && return 0
    [ "$(date +%s)" -ge "$end" ] && return 1
    sleep 0.1
  done
}

CTLD=$(pidof_file slurmctld || true)
SLURMD=$(pidof_file slurmd || true)
MUNGED=$(pidof_file munged || true)

# 1. cancel all jobs while the controller is still up, wait for them to finish
if [ -n "$CTLD" ] && alive "$CTLD" && [ -f "$CONF" ]; then
  jobs=$(timeout 10 squeue -h -o '%i' 2>/dev/null || true)
  if [ -n "$jobs" ]; then
    log "cancelling jobs: $(echo $jobs)"
    # shellcheck disable=SC2086
    timeout 10 scancel $jobs 2>/dev/null || true
    kw=$(sed -n 's/^KillWait=//p' "$CONF"); kw=${kw:-30}
    end=$(( $(date +%s) + kw + 10 ))
    while [ -n "$(timeout 5 squeue -h -o '%i' 2>/dev/null)" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.2; done
  fi
fi

# 2. stop daemons: slurmd, then slurmctld (+ its slurmscriptd), then munged
SCRIPTD=""
[ -n "$CTLD" ] && SCRIPTD=$(pgrep -P "$CTLD" 2>/dev/null | tr '\n' ' ')
stop() {  # stop NAME PID...
  local name=$1; shift
  local pids=""
  for p in "$@"; do [ -n "$p" ] && alive "$p" && pids="$pids $p"; done
  [ -z "$pids" ] && return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null
  if ! wait_gone 10 $pids; then
    log "$name did not stop on SIGTERM; sending SIGKILL"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null; wait_gone 5 $pids
  fi
}
stop slurmd "$SLURMD"
stop slurmctld "$CTLD" $SCRIPTD

# 3. anything still carrying this cluster's SLURM_CONF (orphaned slurmstepd, job tasks)
strays=$(stray_pids | tr '\n' ' ')
if [ -n "${strays// /}" ]; then
  log "killing leftover job processes: $strays"
  # shellcheck disable=SC2086
  kill -KILL $strays 2>/dev/null
  # shellcheck disable=SC2086
  wait_gone 5 $strays
fi

stop munged "$MUNGED"

# 4. verify
left=""
for p in $SLURMD $CTLD $SCRIPTD $MUNGED $(stray_pids); do alive "$p" && left="$left $p"; done
if [ -n "$left" ]; then
  log "ERROR: still running:"; ps -o pid,stat,args -p "${left# }" >&2 || true
  exit 1
fi
rm -f "$DIR"/run/*.pid "$DIR/munge/munge.socket" "$DIR/munge/munge.socket.lock"
log "stopped (nothing left running for $DIR)"
