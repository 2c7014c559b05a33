#!/usr/bin/env bash
# Interference detection under real competing work (issue 29): ci/measure-interference.sh runs a
# small selection once on the machine as it is and once beside one busy-looping process per core
# (started and stopped by it, bounded in time). Asserted: the quiet run flags no row (when the
# machine was quiet by its own stage-level measurement: otherwise its flags are not false alarms),
# the busy run flags rows, every row it slowed 3x or more is flagged, and it says so in its output
# and its machine.json. The false-alarm rate over many runs is in docs/regression-gate.md.
# Usage: interference_run_test.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1
scratch=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$scratch"
PHASEBENCH_BUILD_DIR=$build PHASEBENCH_INTERFERENCE_MAX_S=240 bash "$repo/ci/measure-interference.sh" "$scratch" 1 1 \
  > "$scratch.out" 2>&1 || { cat "$scratch.out"; exit 1; }
cat "$scratch.out"
summary=$(grep '^summary: ' "$scratch.out")
value() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< " ${summary#summary: }"; }
if [[ $(value machine_quiet) == yes ]]; then
  test "$(value quiet_flagged)" -eq 0 || { echo "false alarm on a quiet machine"; exit 1; }
else
  echo "the quiet run was not quiet (other work while it timed): its flags are not judged"
fi
test "$(value busy_flagged)" -ge 1 || { echo "no row flagged beside $(nproc) busy processes"; exit 1; }
test "$(value slowed_flagged)" -eq "$(value slowed)" || { echo "a row slowed 3x or more was not flagged"; exit 1; }
grep -q "warning: other work on the machine disturbed" "$scratch/busy-1.log"
python3 - "$scratch/busy-1/machine.json" << 'PY'
import json, sys
state = json.load(open(sys.argv[1]))["machine_state"]
assert state["cores_to_itself"] is False, state
assert state["disturbed_rows"] >= 1, state
assert state["stages"]["timing"]["others_cores"] > 0.5, state
PY
echo "interference_run_test: passed"
