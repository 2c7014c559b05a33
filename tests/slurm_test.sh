#!/usr/bin/env bash
# ci/slurm/ on a real Slurm: a one-node cluster of Debian's slurm-wlm and munge, started here from
# a configuration generated into a temporary folder (this host the controller and its one node, no
# cgroups, no systemd, ports that are free now, its own munge key and socket), and stopped by the
# trap whatever happens. On it:
#   1. ci/slurm/submit.sh submits 4 shards of a quick small selection and their merge; the merged
#      run is complete, holds every case of the same selection run unsharded exactly once with
#      the same verdict, went into the named history, and is read by compare, report and the gate;
#   2. the same submission with shard 2 cancelled while it runs and shard 4 cancelled before it
#      starts: the merge names both, marks the merged run incomplete, and compare and the gate
#      refuse it; `submit.sh --finish` resumes shard 2, runs shard 4 and merges again, complete.
# Exit 77 (CTest's skip) when the packages are missing or the daemons cannot start, with the reason.
# Usage: slurm_test.sh BUILD_DIR SCRATCH_DIR   (PHASEBENCH_SLURM_TEST_SELECTION: below)
set -euo pipefail
build=$(cd "$1" && pwd)
scratch=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
pb=$build/phasebench
# The selection: one suite keeps the test within a few minutes on 2 cores (docs/fleets.md says how
# long each takes); PHASEBENCH_SLURM_TEST_SELECTION="" runs the whole small suite.
read -r -a selection <<< "--quick --size small ${PHASEBENCH_SLURM_TEST_SELECTION---suite trainer2}"
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)

skip() {
  echo "slurm_test: SKIPPED: $1"
  exit 77
}
fail() {
  echo "slurm_test: FAILED: $1" >&2
  exit 1
}
for program in munged mungekey slurmctld slurmd sbatch squeue scancel sinfo python3; do
  command -v "$program" > /dev/null || skip "$program is not installed (bash ci/install-deps.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" -eq 0 ] || skip "the test cluster's slurmd runs jobs as root, so the test needs root"

# The cluster lives in a short path (unix sockets are limited to 107 characters); its logs are
# copied to $scratch/cluster-logs when the test ends.
cluster=$(mktemp -d "${TMPDIR:-/tmp}/pb-slurm.XXXXXX")
pids=()
stop_cluster() {
  local status=$? pid
  trap - EXIT
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    scancel --quiet --user=root 2> /dev/null || true
    for _ in $(seq 60); do
      [ -z "$(squeue -h 2> /dev/null)" ] && break
      sleep 0.5
    done
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 40); do kill -0 "$pid" 2> /dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2> /dev/null || true
  done
  mkdir -p "$scratch/cluster-logs"
  cp "$cluster"/log/* "$scratch/cluster-logs/" 2> /dev/null || true
  rm -rf "$cluster"
  exit "$status"
}
trap stop_cluster EXIT
trap 'exit 143' TERM INT HUP

# wait_until SECONDS COMMAND...: polls COMMAND until it succeeds; returns 1 after SECONDS.
wait_until() {
  local limit=$1 start=$SECONDS
  shift
  until "$@"; do
    ((SECONDS - start < limit)) || return 1
    sleep 0.25
  done
}
log_tail() { tail -n 15 "$cluster"/log/* 2> /dev/null; }

# munge: its own key and socket.
mkdir -p "$cluster/munge" "$cluster/munge-key" "$cluster/state" "$cluster/spool" "$cluster/log"
chmod 700 "$cluster/munge-key"
chmod 755 "$cluster" "$cluster/munge"
mungekey --create --keyfile="$cluster/munge-key/munge.key" > /dev/null 2>&1 || skip "mungekey cannot create a key"
munge_socket=$cluster/munge/socket
munged --foreground --key-file="$cluster/munge-key/munge.key" --socket="$munge_socket" \
  --pid-file="$cluster/munge/munged.pid" --seed-file="$cluster/munge/seed" --log-file="$cluster/log/munged.log" \
  > "$cluster/log/munged.out" 2>&1 &
pids+=($!)
credential_decodes() { munge --socket="$munge_socket" -n 2> /dev/null | unmunge --socket="$munge_socket" > /dev/null 2>&1; }
wait_until 20 credential_decodes || { log_tail; skip "munged did not start (its log above)"; }

read -r controller_port node_port < <(python3 -c '
import socket
held = [socket.socket() for _ in range(2)]
for s in held: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in held))')
host=$(hostname -s)
export SLURM_CONF=$cluster/slurm.conf
cat > "$SLURM_CONF" << EOF
ClusterName=phasebenchtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$controller_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=60
NodeName=pbnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=pb Nodes=pbnode Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -f "$SLURM_CONF" > "$cluster/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N pbnode -f "$SLURM_CONF" > "$cluster/log/slurmd.out" 2>&1 &
pids+=($!)
# Waiting ends early when a daemon has exited: then the node never comes up.
daemons_alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null || return 1; done
}
node_idle_or_daemon_gone() { ! daemons_alive || [ "$(sinfo -h -n pbnode -o %T 2> /dev/null)" = idle ]; }
wait_until 60 node_idle_or_daemon_gone && daemons_alive ||
  { log_tail; skip "slurmctld and slurmd did not bring the node up (their logs above)"; }
# A job of one line shows that the node can run jobs here at all (slurmstepd, its privileges).
probe_job=$(sbatch --parsable --output="$cluster/log/probe.out" --wrap 'echo probe ran') ||
  { log_tail; skip "sbatch cannot submit to the test cluster"; }
probe_ran() { [ -z "$(squeue -h -j "$probe_job" 2> /dev/null)" ] && grep -q "probe ran" "$cluster/log/probe.out" 2> /dev/null; }
wait_until 60 probe_ran || { log_tail; skip "the test cluster does not run a job (its logs above)"; }
echo "slurm_test: one-node cluster up ($(sinfo -V)), controller port $controller_port"

# The selection unsharded: what the merged runs must equal. Exit 1 (a failed check) is a verdict.
start=$SECONDS
"$pb" run "${selection[@]}" --out "$scratch/whole" > "$scratch/whole.log" 2>&1 || [ $? -eq 1 ] ||
  { cat "$scratch/whole.log"; fail "the unsharded run failed"; }
echo "slurm_test: unsharded run in $((SECONDS - start)) s"

# submit NAME ARGS...: ci/slurm/submit.sh ARGS, its output in $scratch/NAME.submit; sets
# array_job (empty when no shard was submitted), merge_job and merged.
submit() {
  local name=$1
  shift
  bash "$repo/ci/slurm/submit.sh" "$@" > "$scratch/$name.submit" 2>&1 || { cat "$scratch/$name.submit"; fail "submit.sh $*"; }
  array_job=$(sed -n 's/^shards: job \([0-9]*\),.*/\1/p' "$scratch/$name.submit")
  merge_job=$(sed -n 's/^merge: job \([0-9]*\),.*/\1/p' "$scratch/$name.submit")
  merged=$(sed -n 's/^merged run: //p' "$scratch/$name.submit")
  [ -n "$merge_job" ] && [ -n "$merged" ] || { cat "$scratch/$name.submit"; fail "submit.sh printed no merge job"; }
}
job_gone() { [ -z "$(squeue -h -j "$1" 2> /dev/null)" ]; }
wait_for_merge() {
  wait_until 600 job_gone "$merge_job" ||
    { squeue; log_tail; fail "merge job $merge_job did not end within 600 s"; }
}

# cases RUN: each row's case and verdict (results.csv's columns 2-8 and 10: suite, workload, size,
# backend, device, phase index, phase; status), one a line, sorted; a case merged twice shows twice.
cases() { awk -F, 'NR > 1 { print $2 "/" $3 "/" $4 "/" $5 "/" $6 "/" $7 "_" $8 " " $10 }' "$1/results.csv" | sort; }
cases "$scratch/whole" > "$scratch/whole.cases"
[ -s "$scratch/whole.cases" ] || fail "the unsharded run has no rows"
same_cases_as_whole() {
  cases "$1" > "$1.cases"
  diff "$scratch/whole.cases" "$1.cases" > "$1.cases.diff" ||
    { cat "$1.cases.diff"; fail "$1 does not hold the unsharded run's cases with their verdicts (< unsharded, > merged)"; }
}
is_complete() { grep -q '"complete": *true' "$1/machine.json"; }

# 1. Four shards and their merge, into a history.
start=$SECONDS
submit all --runs "$scratch/all" --phasebench "$pb" --history "$scratch/history.sqlite" -- "${selection[@]}"
[ -n "$array_job" ] || fail "submit.sh submitted no shards"
wait_for_merge
echo "slurm_test: 4 shards and their merge in $((SECONDS - start)) s"
[ -d "$merged" ] || { cat "$scratch"/all/logs/*; fail "no merged run at $merged"; }
is_complete "$merged" || fail "$merged is not marked complete"
for index in 1 2 3 4; do
  grep -q "\"shard\": \"$index/4\"" "$merged/machine.json" || fail "shard $index/4 is not among the merged inputs"
done
same_cases_as_whole "$merged"
[ -s "$merged/report.html" ] || fail "the merge job wrote no report.html"
"$pb" history --db "$scratch/history.sqlite" list > "$scratch/history.list"
run_id=$(sed -n 's/^  "run_id": "\([^"]*\)".*/\1/p' "$merged/machine.json")
[ -n "$run_id" ] && grep -qF "$run_id" "$scratch/history.list" || fail "the merged run ($run_id) is not in the history"
"$pb" compare "$merged" "$merged" > "$scratch/compare-self.out" 2>&1 ||
  { cat "$scratch/compare-self.out"; fail "compare of the merged run against itself did not pass"; }
"$pb" compare "$scratch/whole" "$merged" --mode ratio > "$scratch/compare-whole.out" 2>&1 || [ $? -eq 1 ] ||
  { cat "$scratch/compare-whole.out"; fail "compare of the unsharded and the merged run failed to read them"; }
"$pb" report "$scratch/whole" "$merged" --out "$scratch/both.html" > /dev/null || fail "report of the two runs"
[ -s "$scratch/both.html" ] || fail "report of the two runs wrote nothing"
# The gate reads the merged run as the run to gate and as the base: it must pass against itself.
PHASEBENCH_SKIP_INSTALL=1 PHASEBENCH_SKIP_BUILD=1 PHASEBENCH_BUILD_DIR=$build PHASEBENCH_GATE_RUN=$merged \
  PHASEBENCH_BASELINE=$merged PHASEBENCH_GATE_OUT=$scratch/gate-all bash "$repo/ci/gate.sh" > "$scratch/gate-all.out" 2>&1 ||
  { cat "$scratch/gate-all.out"; fail "the gate did not pass the merged run against itself"; }

# 2. Shard 2 cancelled while it runs (it writes what it finished, marked incomplete), shard 4
# before it starts (no directory at all): the node runs one exclusive task at a time, in order.
start=$SECONDS
submit cancel --runs "$scratch/cancel" --phasebench "$pb" -- "${selection[@]}"
runs=$scratch/cancel
shard2_checking() {
  [ "$(squeue -h -j "${array_job}_2" -o %T 2> /dev/null)" = RUNNING ] &&
    grep -q "\] checked " "$runs/logs/shard-2.log" 2> /dev/null
}
wait_until 300 shard2_checking || { squeue; log_tail; fail "array task 2 was never seen running phasebench"; }
scancel "${array_job}_2" "${array_job}_4"
wait_for_merge
echo "slurm_test: the cancelled submission in $((SECONDS - start)) s"
[ -d "$runs/shard-2/resume" ] || { cat "$runs/logs/shard-2.log"; fail "cancelled shard 2 left no incomplete run to resume"; }
grep -q "stopped by SIGTERM" "$runs/shard-2/machine.json" || fail "shard 2 does not say it was stopped"
[ ! -e "$runs/shard-4" ] || fail "shard 4 ran although it was cancelled before it started"
[ -d "$merged" ] || { cat "$runs"/logs/merge-*.log; fail "no merged run at $merged"; }
! is_complete "$merged" || fail "the merge of a cancelled run is marked complete"
grep -q '"missing_shards": *\[ *"4/4" *\]' <(tr -d '\n' < "$merged/machine.json") || fail "missing_shards does not name 4/4"
grep -q "shard 4/4 is missing" "$merged/machine.json" || fail "the merged run's reason does not name the missing shard"
grep -q "shard-2 (shard 2/4, stopped by SIGTERM" "$merged/machine.json" || fail "the reason does not name the stopped shard"
grep -q "finish it with: ci/slurm/submit.sh --finish $runs" "$runs/logs/merge-$merge_job.log" ||
  { cat "$runs/logs/merge-$merge_job.log"; fail "the merge job does not say how to finish the run"; }
status=0
"$pb" compare "$merged" "$merged" > "$scratch/compare-incomplete.out" 2>&1 || status=$?
[ "$status" -eq 2 ] && grep -q "is an incomplete run (shard 4/4 is missing" "$scratch/compare-incomplete.out" ||
  { cat "$scratch/compare-incomplete.out"; fail "compare did not refuse the incomplete merged run (exit $status)"; }
status=0
PHASEBENCH_SKIP_INSTALL=1 PHASEBENCH_SKIP_BUILD=1 PHASEBENCH_BUILD_DIR=$build PHASEBENCH_GATE_RUN=$merged \
  PHASEBENCH_BASELINE=$scratch/whole PHASEBENCH_GATE_OUT=$scratch/gate-incomplete bash "$repo/ci/gate.sh" \
  > "$scratch/gate-incomplete.out" 2>&1 || status=$?
[ "$status" -eq 2 ] || { cat "$scratch/gate-incomplete.out"; fail "the gate did not refuse the incomplete merged run (exit $status)"; }

# Finishing it: shard 2 resumed, shard 4 run, merged again.
start=$SECONDS
first_merged=$merged
submit finish --finish "$runs"
grep -q "^shards: job $array_job, array tasks 2,4 of 4" "$scratch/finish.submit" || { cat "$scratch/finish.submit"; fail "--finish did not submit shards 2 and 4 alone"; }
wait_for_merge
echo "slurm_test: finishing it in $((SECONDS - start)) s"
[ "$merged" != "$first_merged" ] || fail "the second merge reused the first one's directory"
grep -q -- "run --resume $runs/shard-2" "$runs/logs/shard-2.log" || fail "shard 2 was not resumed"
is_complete "$merged" || fail "the second merge, $merged, is not complete"
same_cases_as_whole "$merged"
"$pb" compare "$merged" "$merged" > /dev/null 2>&1 || fail "compare of the finished merged run against itself"
echo "slurm_test: passed"
