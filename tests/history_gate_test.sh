#!/usr/bin/env bash
# ci/gate.sh against a results history (PHASEBENCH_GATE_HISTORY, docs/history.md), end to end on a
# real SQLite file: the gate pools the newest runs of this machine on main and compares a run with
# them; it passes an unchanged run, fails (exit 1) a slower one and one whose check now fails, says
# which runs it used, and exits 2 with the reason when the history has no run for it.
#
# One real quick run of one workload (seconds) is the template of every run here: the history's runs
# and the gated runs are copies of it under new run ids (PHASEBENCH_GATE_RUN gates a run without
# running the suite), the slower one with every time multiplied by 1.5, the wrong one with one row's
# check marked FAIL. So no verdict depends on the machine's timing: an unchanged run has the very
# samples of the history's runs, and 20 repetitions make a 1.5x slowdown of every repetition
# significant on every timed row.
# Usage: history_gate_test.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1
scratch=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
pb=$build/phasebench
rm -rf "$scratch"
mkdir -p "$scratch"
export PHASEBENCH_SKIP_INSTALL=1 PHASEBENCH_SKIP_BUILD=1 PHASEBENCH_BUILD_DIR=$build
export PHASEBENCH_GATE_HISTORY=$scratch/history.sqlite PHASEBENCH_GATE_HISTORY_WINDOW=3

"$pb" run --quick --reps 20 --threads 1 --size small --filter trainer2/lior_step --out "$scratch/template" > /dev/null 2>&1
template_id=$(awk -F, 'NR == 2 { print $1 }' "$scratch/template/results.csv")
fingerprint=$("$pb" baseline fingerprint)

# copy_run ID [FACTOR]: the template as run ID (at $scratch/ID), its times (samples and the row
# statistics of results.csv) multiplied by FACTOR.
copy_run() {
  local id=$1 factor=${2:-1} file
  mkdir "$scratch/$id"
  for file in "$scratch/template"/*; do sed "s/$template_id/$id/g" "$file" > "$scratch/$id/$(basename "$file")"; done
  scale_columns '^(cpu_)?ms$' "$factor" "$scratch/$id/samples.csv"
  scale_columns '^(median|min|max|ci_low|ci_high)_ms$' "$factor" "$scratch/$id/results.csv"
  clear_column disturbed "$scratch/$id/results.csv"
}
# clear_column NAME CSV: empties the column NAME. The copies' times are made up, so whether other
# tests disturbed the template run (ctest runs tests side by side) is not theirs to inherit: a
# disturbed row is not judged by the gate, which these verdicts are about.
clear_column() {
  awk -F, -v OFS=, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) at = i; print; next }
    { if (at) $at = ""; print }' "$2" > "$2.cleared"
  mv "$2.cleared" "$2"
}
# scale_columns REGEX FACTOR CSV: multiplies the CSV's columns whose header matches REGEX, in place.
scale_columns() {
  awk -F, -v OFS=, -v pattern="$1" -v f="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ pattern) scaled[i] = 1; print; next }
    { for (i in scaled) if ($i != "") $i = sprintf("%.9g", $i * f); print }' "$3" > "$3.scaled"
  mv "$3.scaled" "$3"
}

# gate NAME RUN [VAR=VALUE...]: ci/gate.sh on RUN against the history, its output in $scratch/NAME.out,
# its summary in $scratch/NAME.md; sets status to its exit code.
gate() {
  local name=$1 run=$2
  shift 2
  status=0
  env "$@" PHASEBENCH_GATE_RUN="$scratch/$run" PHASEBENCH_GATE_OUT="$scratch/gate-$name" \
    PHASEBENCH_GATE_SUMMARY="$scratch/$name.md" bash "$repo/ci/gate.sh" > "$scratch/$name.out" 2>&1 || status=$?
}

# The history: three runs on main, and a newer one on a topic branch that the gate must not use.
for minute in 01 02 03 04; do copy_run "20261125T10${minute}00Z-history"; done
"$pb" history --db "$PHASEBENCH_GATE_HISTORY" add --branch main "$scratch"/20261125T10{01,02,03}00Z-history > /dev/null
"$pb" history --db "$PHASEBENCH_GATE_HISTORY" add --branch topic "$scratch/20261125T100400Z-history" > /dev/null
used="the newest 3 runs of machine $fingerprint on main in sqlite $PHASEBENCH_GATE_HISTORY, 20261125T100100Z-history to 20261125T100300Z-history"

copy_run 20261125T110000Z-unchanged
gate unchanged 20261125T110000Z-unchanged
test "$status" -eq 0 || { cat "$scratch/unchanged.out"; exit 1; }
grep -qF "gate: history window: $used" "$scratch/unchanged.out"
grep -qF "**Base:** history window: $used" "$scratch/unchanged.md"
grep -q "phasebench compare: passed" "$scratch/unchanged.md"
grep -q "mode time" "$scratch/unchanged.md"

copy_run 20261125T110100Z-slower 1.5
gate slower 20261125T110100Z-slower PHASEBENCH_GATE_JUNIT="$scratch/junit/slower.xml"
test "$status" -eq 1 || { cat "$scratch/slower.out"; exit 1; }
grep -q "trainer2/lior_step/small/kokkos/cpu/3_fused_lior_spd .* +50.0%.* REGRESSION" "$scratch/slower.out"
# PHASEBENCH_GATE_JUNIT: the same verdict as a JUnit case that fails with its numbers, in a folder
# the gate makes.
python3 "$repo/tests/junit_report_test.py" --check "$scratch/junit/slower.xml" > "$scratch/slower.cases"
grep -qP "^failure\ttrainer2/lior_step\tsmall/kokkos/cpu/3_fused_lior_spd\t\+50\.0% slower \[.*\], Holm p .*, threshold 10%$" \
  "$scratch/slower.cases" || { cat "$scratch/slower.cases"; exit 1; }
grep -qF "**Base:** history window: $used" "$scratch/slower.md"

copy_run 20261125T110200Z-wrong
awk -F, -v OFS=, 'NR > 1 && $5 == "torch" && $6 == "cpu" && $8 == "fused_lior_spd" { $10 = "FAIL"; $11 = "output s: rel_l2_err 0.5 > tolerance 1e-05" } { print }' \
  "$scratch/template/results.csv" | sed "s/$template_id/20261125T110200Z-wrong/g" > "$scratch/20261125T110200Z-wrong/results.csv"
gate wrong 20261125T110200Z-wrong
test "$status" -eq 1 || { cat "$scratch/wrong.out"; exit 1; }
grep -q "trainer2/lior_step/small/torch/cpu/3_fused_lior_spd .*OK -> FAIL" "$scratch/wrong.out"
grep -q "compare: FAILED: 1 row broken (now failing its check)$" "$scratch/wrong.out"

# No run of this machine on the branch asked for: bad setup, exit 2, saying so, before any compare.
gate orphan 20261125T110000Z-unchanged PHASEBENCH_GATE_HISTORY_BRANCH=no-such-branch
test "$status" -eq 2 || { cat "$scratch/orphan.out"; exit 1; }
grep -qF "no complete, failure-free run of machine $fingerprint on no-such-branch" "$scratch/orphan.out"
test ! -e "$scratch/orphan.md"

# An existing run is gated as it is: not with --record, and it must be a run directory.
status=0
PHASEBENCH_GATE_RUN=$scratch/20261125T110000Z-unchanged bash "$repo/ci/gate.sh" --record > "$scratch/record.out" 2>&1 ||
  status=$?
test "$status" -eq 2
grep -q "not with --record" "$scratch/record.out"
gate not-a-run no-such-run
test "$status" -eq 2
grep -q "is not a run directory" "$scratch/not-a-run.out"
echo "history_gate_test: passed"
