#!/usr/bin/env bash
# ci/gate.sh end to end on a build: `--record` files a baseline, the gate then compares against it
# (in time mode: the baseline is of this machine) and writes a passing Markdown summary, without
# any baseline it exits 2 saying how to record one, and an incomplete baseline is refused. With 3
# quick repetitions per process the fastest quarter of the pooled samples is 3 per row, too few for
# any row to be significant after the correction for the rows compared, so the outcome does not
# depend on timings.
# Usage: gate_test.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1
scratch=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
export PHASEBENCH_SKIP_INSTALL=1 PHASEBENCH_SKIP_BUILD=1 PHASEBENCH_BUILD_DIR=$build
export PHASEBENCH_GATE_RUN_ARGS="--quick --size small --filter trainer2/lior_step"
export PHASEBENCH_BASELINES_DIR=$scratch/baselines
# The outcome must not depend on timings: rows that other work disturbed are left out of the test,
# so the Holm correction may be over a single row, where 3 samples a side reach p = 0.05 (a CI run
# flagged the serial reference at +11.8% so). A 1000% threshold keeps any timing change below a
# regression here; compare's own tests (tests/compare_test.cpp) check what it flags.
export PHASEBENCH_GATE_COMPARE_ARGS="--fastest 25 --threshold 1000 --metric cpu"

PHASEBENCH_GATE_OUT=$scratch/record bash "$repo/ci/gate.sh" --record
fingerprint=$("$build/phasebench" baseline fingerprint)
test -f "$PHASEBENCH_BASELINES_DIR/$fingerprint/samples.csv"

PHASEBENCH_GATE_OUT=$scratch/gate PHASEBENCH_GATE_SUMMARY=$scratch/summary.md bash "$repo/ci/gate.sh"
grep -q "phasebench compare: passed" "$scratch/summary.md"
grep -q "mode time" "$scratch/summary.md"
grep -q "CPU time of the process" "$scratch/summary.md"  # the gate compares CPU time by default
test -d "$scratch/gate/process-3" && test -f "$scratch/gate/pooled/results.csv"
# A base without CPU times: the gate compares wall time and says so. (An old run pooled by this
# phasebench, as the gate pools a base build's processes, has the cpu_ms column but no values.)
cp -r "$PHASEBENCH_BASELINES_DIR/$fingerprint" "$scratch/old-baseline"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "cpu_ms") column = i }
                  NR > 1 { $column = "" } { print }' "$PHASEBENCH_BASELINES_DIR/$fingerprint/samples.csv" \
  > "$scratch/old-baseline/samples.csv"
grep -q '^workload,.*,cpu_ms,' "$scratch/old-baseline/samples.csv"
PHASEBENCH_BASELINE=$scratch/old-baseline PHASEBENCH_GATE_OUT=$scratch/old PHASEBENCH_GATE_SUMMARY=$scratch/old.md \
  bash "$repo/ci/gate.sh"
grep -q "phasebench compare: passed" "$scratch/old.md"
grep -q "has no CPU times" "$scratch/old.md"
if grep -q "CPU time of the process" "$scratch/old.md"; then exit 1; fi
# A run on a busy machine says so beside its verdict (any load counts as busy with a limit of -1).
PHASEBENCH_GATE_BUSY_LOAD=-1 PHASEBENCH_GATE_OUT=$scratch/busy PHASEBENCH_GATE_SUMMARY=$scratch/busy.md \
  bash "$repo/ci/gate.sh"
grep -q "machine was busy" "$scratch/busy.md"

# Against a base build run interleaved with this one (here the same build: an A/A comparison), with
# no baseline at all: processes alternate base, new / new, base / base, new, and both are pooled.
PHASEBENCH_BASELINES_DIR=$scratch/none PHASEBENCH_GATE_BASE_BUILD=$build PHASEBENCH_GATE_OUT=$scratch/ab \
  PHASEBENCH_GATE_SUMMARY=$scratch/ab.md bash "$repo/ci/gate.sh"
grep -q "phasebench compare: passed" "$scratch/ab.md"
grep -q "mode time" "$scratch/ab.md"
test "$scratch/ab/base/process-1/results.csv" -ot "$scratch/ab/new/process-1/results.csv"
test "$scratch/ab/new/process-2/results.csv" -ot "$scratch/ab/base/process-2/results.csv"
test "$scratch/ab/base/process-3/results.csv" -ot "$scratch/ab/new/process-3/results.csv"
test -f "$scratch/ab/base/pooled/samples.csv" && test -f "$scratch/ab/new/pooled/samples.csv"
# A base that is not a commit, or a base build without phasebench, is bad setup: exit 2, named.
for setting in PHASEBENCH_GATE_BASE_REF=no-such-ref PHASEBENCH_GATE_BASE_BUILD=$scratch/none; do
  status=0
  env "$setting" PHASEBENCH_GATE_OUT="$scratch/bad-base" bash "$repo/ci/gate.sh" 2> "$scratch/stderr" || status=$?
  test "$status" -eq 2
  grep -q "${setting#*=}" "$scratch/stderr"
done
# A baseline marked incomplete (stopped before it finished) is refused, exit 2 naming it, unless
# PHASEBENCH_GATE_ALLOW_INCOMPLETE is set; then the summary says so.
cp -r "$PHASEBENCH_BASELINES_DIR/$fingerprint" "$scratch/incomplete-baseline"
sed -i '1s/^{/{"complete": false, "incomplete": {"reason": "stopped by SIGTERM"},/' "$scratch/incomplete-baseline/machine.json"
status=0
PHASEBENCH_BASELINE=$scratch/incomplete-baseline PHASEBENCH_GATE_PROCESSES=1 PHASEBENCH_GATE_OUT=$scratch/incomplete \
  bash "$repo/ci/gate.sh" 2> "$scratch/stderr" || status=$?
test "$status" -eq 2
grep -q "incomplete-baseline is an incomplete run (stopped by SIGTERM)" "$scratch/stderr"
PHASEBENCH_GATE_ALLOW_INCOMPLETE=1 PHASEBENCH_BASELINE=$scratch/incomplete-baseline PHASEBENCH_GATE_PROCESSES=1 \
  PHASEBENCH_GATE_OUT=$scratch/allowed PHASEBENCH_GATE_SUMMARY=$scratch/allowed.md bash "$repo/ci/gate.sh"
grep -q "phasebench compare: passed" "$scratch/allowed.md"
grep -q "is an incomplete run" "$scratch/allowed.md"

status=0
PHASEBENCH_BASELINES_DIR=$scratch/none PHASEBENCH_GATE_OUT=$scratch/orphan bash "$repo/ci/gate.sh" \
  2> "$scratch/stderr" || status=$?
test "$status" -eq 2
grep -q -- "--record" "$scratch/stderr"
echo "gate_test: passed"
