#!/usr/bin/env bash
# How well `run` tells a disturbed row from an undisturbed one (docs/regression-gate.md).
#
#   bash ci/measure-interference.sh OUT_DIR [QUIET_RUNS] [BUSY_RUNS]
#
# Runs a small selection QUIET_RUNS times on the machine as it is (default 3), then BUSY_RUNS times
# (default 1) while real competing work runs: one busy-looping process per logical core (bounded:
# each stops after PHASEBENCH_INTERFERENCE_MAX_S seconds, default 300, and all are killed when this
# script ends, however it ends). Prints, for the timed rows:
#   quiet: rows flagged `disturbed` / rows timed (the false alarms), and how busy the machine was
#   busy:  rows flagged / rows timed, and the rows slowed 3x or more against the quiet runs' median,
#          with how many of those are flagged (each should be)
# and ends with one line per verdict, `summary: quiet_flagged=F quiet_rows=R machine_quiet=yes|no
# busy_flagged=F busy_rows=R slowed=S slowed_flagged=SF`, that tests/interference_run_test.sh reads.
# "machine_quiet=no" means other work used 0.3 cores or more while a quiet run timed (machine.json
# machine_state): its flags are then not false alarms.
#
# Settings: PHASEBENCH_BUILD_DIR (default build), PHASEBENCH_INTERFERENCE_ARGS (the selection,
# default "--size small --filter trainer2/lior_step --reps 5": fine-grained 2-thread rows, whose
# OpenMP threads spin waiting for each other), PHASEBENCH_INTERFERENCE_MAX_S.
set -euo pipefail
out=${1:?usage: measure-interference.sh OUT_DIR [QUIET_RUNS] [BUSY_RUNS]}
quiet_runs=${2:-3}
busy_runs=${3:-1}
build=${PHASEBENCH_BUILD_DIR:-build}
pb=$build/phasebench
read -r -a selection <<< "${PHASEBENCH_INTERFERENCE_ARGS:---size small --filter trainer2/lior_step --reps 5}"
max_s=${PHASEBENCH_INTERFERENCE_MAX_S:-300}
if [[ ! -x $pb ]]; then
  echo "measure-interference: no phasebench in $build (set PHASEBENCH_BUILD_DIR)" >&2
  exit 2
fi
mkdir -p "$out"

spinners=()
stop_spinners() {
  if ((${#spinners[@]})); then
    kill "${spinners[@]}" 2> /dev/null || true
    wait "${spinners[@]}" 2> /dev/null || true
  fi
  spinners=()
}
trap stop_spinners EXIT
start_spinners() {
  local count
  count=$(nproc)
  for ((i = 0; i < count; ++i)); do
    timeout "$max_s" bash -c 'while :; do :; done' &
    spinners+=($!)
  done
  sleep 1  # let them take the cores before the run starts
}

# One run of the selection into $1 (a new directory; the run refuses an existing one).
run_selection() {
  "$pb" run "${selection[@]}" --out "$1" > "$1.log" 2>&1 || {
    echo "measure-interference: the run into $1 failed (log: $1.log)" >&2
    tail -20 "$1.log" >&2
    exit 1
  }
}

for ((i = 1; i <= quiet_runs; ++i)); do run_selection "$out/quiet-$i"; done
if ((busy_runs > 0)); then start_spinners; fi
for ((i = 1; i <= busy_runs; ++i)); do run_selection "$out/busy-$i"; done
stop_spinners

python3 - "$out" "$quiet_runs" "$busy_runs" << 'EOF'
import csv, json, statistics, sys
out, quiet_runs, busy_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def timed_rows(run):
    with open(f"{out}/{run}/results.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["status"] == "OK" and r["median_ms"] not in ("", "nan")]

def name(row):
    return "/".join(row[k] for k in ("suite", "workload", "size", "backend", "device", "phase"))

def timing_others(run):
    with open(f"{out}/{run}/machine.json") as f:
        return json.load(f)["machine_state"]["stages"]["timing"]["others_cores"]

quiet_medians, quiet_flagged, quiet_rows, machine_quiet = {}, 0, 0, True
for i in range(1, quiet_runs + 1):
    run = f"quiet-{i}"
    others = timing_others(run)
    machine_quiet &= others < 0.3
    for row in timed_rows(run):
        quiet_rows += 1
        quiet_medians.setdefault(name(row), []).append(float(row["median_ms"]))
        if row["disturbed"]:
            quiet_flagged += 1
            print(f"quiet false alarm? {run} {name(row)}: {row['disturbed']}")
    print(f"{run}: other work while timing {others:.3f} cores")
busy_flagged = busy_rows = slowed = slowed_flagged = 0
for i in range(1, busy_runs + 1):
    run = f"busy-{i}"
    print(f"{run}: other work while timing {timing_others(run):.3f} cores")
    for row in timed_rows(run):
        busy_rows += 1
        busy_flagged += bool(row["disturbed"])
        quiet = quiet_medians.get(name(row))
        ratio = float(row["median_ms"]) / statistics.median(quiet) if quiet else float("nan")
        mark = "flagged" if row["disturbed"] else "not flagged"
        if ratio >= 3:
            slowed += 1
            slowed_flagged += bool(row["disturbed"])
        print(f"  {name(row)}: {ratio:.2f}x the quiet median, {mark} {row['disturbed']}")
print(f"quiet: {quiet_flagged} of {quiet_rows} timed rows flagged over {quiet_runs} runs")
print(f"busy: {busy_flagged} of {busy_rows} timed rows flagged; {slowed} slowed 3x or more, {slowed_flagged} of them flagged")
print(f"summary: quiet_flagged={quiet_flagged} quiet_rows={quiet_rows} machine_quiet={'yes' if machine_quiet else 'no'}"
      f" busy_flagged={busy_flagged} busy_rows={busy_rows} slowed={slowed} slowed_flagged={slowed_flagged}")
EOF
