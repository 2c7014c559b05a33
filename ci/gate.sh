#!/usr/bin/env bash
# The regression gate (docs/regression-gate.md): build, run the quick suite, compare it with the
# committed baseline of this machine (results/baselines/<fingerprint>/) in time mode -- or, when
# no baseline matches this machine's fingerprint, with another one in ratio mode -- and write a
# Markdown summary for the pull request.
#
#   bash ci/gate.sh                   exit 0 pass, 1 a regression or a check that now fails, 2 bad setup
#   PHASEBENCH_GATE_BASE_REF=origin/main bash ci/gate.sh
#                                     the same verdict against the base commit, built beside this one
#                                     and run interleaved with it (no baseline needed; see below)
#   bash ci/gate.sh --record          run the quick suite; record (or refresh) this machine's baseline
#   bash ci/gate.sh --run-suite DIR   only run the quick suite into DIR (ci/measure-gate.sh uses it)
#
# The quick suite, as docs/regression-gate.md measured it: the small size, one thread, 30 short
# repetitions, in 3 processes whose samples are pooled (`merge --pool`); then `compare` looks at
# the CPU time of the fastest quarter of each row's repetitions and fails slowdowns over 10%. Each
# choice is there because the measurement needed it on a shared machine; see that document.
#
# Environment (all optional):
#   PHASEBENCH_BUILD_DIR          build directory (default build)
#   PHASEBENCH_SKIP_INSTALL=1     do not run ci/install-deps.sh;  PHASEBENCH_SKIP_BUILD=1: do not build
#   PHASEBENCH_GATE_RUN_ARGS      `run` options of the suite (a baseline must be recorded with the same)
#   PHASEBENCH_GATE_PROCESSES     how many processes run the suite (default 3)
#   PHASEBENCH_GATE_COMPARE_ARGS  `compare` options (default "--fastest 25 --threshold 10 --metric cpu --shift none")
#   PHASEBENCH_GATE_MODE          time (default, this machine's baseline) or ratio (always ratio)
#   PHASEBENCH_GATE_OUT           directory to create for the runs (default results/runs/gate-<UTC time>)
#   PHASEBENCH_GATE_SUMMARY       Markdown summary to write (default <that directory>/summary.md)
#   PHASEBENCH_GATE_JUNIT         also write compare's verdicts as a JUnit XML report to this file (for
#                                 GitLab's or Jenkins' test reports: a failing case per regression)
#   PHASEBENCH_BASELINE           a baseline directory to use instead of the automatic choice
#   PHASEBENCH_BASELINES_DIR      where baselines live (default results/baselines)
#   PHASEBENCH_GATE_HISTORY       a results history (SQLite file or postgresql:// URL, docs/history.md):
#                                 compare with its newest PHASEBENCH_GATE_HISTORY_WINDOW (default 5)
#                                 runs of this machine on PHASEBENCH_GATE_HISTORY_BRANCH (default main),
#                                 pooled, instead of a committed baseline
#   PHASEBENCH_GATE_RUN           an existing run directory to gate instead of running the suite (one made by
#                                 `gate.sh --run-suite DIR`, i.e. DIR/pooled, or by another job); not with
#                                 --record or a base build
#   PHASEBENCH_GATE_BUSY_LOAD     1-minute load average above which the summary warns that timing
#                                 verdicts are unreliable (default: the number of cores)
#   PHASEBENCH_GATE_BASE_REF      a git commit to compare with instead of a baseline: it is checked
#                                 out into a worktree (PHASEBENCH_GATE_BASE_SRC, default .gate/base),
#                                 built there by its own ci/build.sh, and its suite processes run
#                                 alternately with this build's, so both see the same machine
#   PHASEBENCH_GATE_BASE_BUILD    the same with a build directory of the base that already exists
#   PHASEBENCH_GATE_ALLOW_INCOMPLETE=1
#                                 accept runs and baselines marked incomplete (stopped before they
#                                 finished: docs/file-formats.md), which merge, compare and baseline
#                                 record otherwise refuse with exit 2; the summary notes them
set -euo pipefail
cd "$(dirname "$0")/.."

run_args=${PHASEBENCH_GATE_RUN_ARGS:---quick --size small --reps 30 --threads 1}
processes=${PHASEBENCH_GATE_PROCESSES:-3}
compare_args=${PHASEBENCH_GATE_COMPARE_ARGS:---fastest 25 --threshold 10 --metric cpu --shift none}
gate_mode=${PHASEBENCH_GATE_MODE:-time}
baselines=${PHASEBENCH_BASELINES_DIR:-results/baselines}
build_dir=${PHASEBENCH_BUILD_DIR:-build}
out=${PHASEBENCH_GATE_OUT:-results/runs/gate-$(date -u +%Y%m%dT%H%M%SZ)}
summary=${PHASEBENCH_GATE_SUMMARY:-$out/summary.md}
base_ref=${PHASEBENCH_GATE_BASE_REF:-}
base_src=${PHASEBENCH_GATE_BASE_SRC:-.gate/base}
base_build=${PHASEBENCH_GATE_BASE_BUILD:-}
pb=$build_dir/phasebench
given_run=${PHASEBENCH_GATE_RUN:-}
allow_incomplete=${PHASEBENCH_GATE_ALLOW_INCOMPLETE:+--allow-incomplete}
junit=${PHASEBENCH_GATE_JUNIT:-}

# One process of the suite into $1/process-$2 (with the phasebench $3, default this build's).
# Exit 1 (a check failed) still gives a run for compare to report; anything else is fatal.
run_process() {
  local dir=$1 i=$2 binary=${3:-$pb} status=0
  mkdir -p "$dir"
  # shellcheck disable=SC2086  # run_args is a list of options
  "$binary" run $run_args --out "$dir/process-$i" || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
    echo "gate: phasebench run failed (exit $status): $binary" >&2
    exit "$status"
  fi
}

# shellcheck disable=SC2086  # allow_incomplete is an option or nothing
pool() { "$pb" merge --pool "$1"/process-* --out "$1/pooled" $allow_incomplete; }

# Runs the suite in $processes processes into $1/process-<i> and pools them into $1/pooled.
run_suite() {
  local i
  for ((i = 1; i <= processes; i++)); do run_process "$1" "$i"; done
  pool "$1"
}

# The suite of the base build ($1/phasebench) into $out/base and of this build into $out/new,
# process by process and alternating which goes first, so that drift of the machine and other
# work on it hit both alike.
run_interleaved() {
  local base_pb=$1/phasebench i
  for ((i = 1; i <= processes; i++)); do
    if ((i % 2 == 1)); then
      run_process "$out/base" "$i" "$base_pb" && run_process "$out/new" "$i"
    else
      run_process "$out/new" "$i" && run_process "$out/base" "$i" "$base_pb"
    fi
  done
  pool "$out/base"
  pool "$out/new"
}

# Checks out $base_ref into $base_src and builds it there with its own ci/build.sh; sets base_build.
build_base() {
  local commit
  if ! commit=$(git rev-parse --verify --quiet "$base_ref^{commit}"); then
    echo "gate: PHASEBENCH_GATE_BASE_REF '$base_ref' is not a commit of this repository (fetch it first)" >&2
    exit 2
  fi
  if [ -d "$base_src" ]; then
    git -C "$base_src" checkout --quiet --detach "$commit"
  else
    git worktree add --quiet --detach "$base_src" "$commit"
  fi
  echo "gate: building the base $base_ref ($commit) in $base_src"
  (cd "$base_src" && PHASEBENCH_BUILD_DIR=build bash ci/build.sh)
  base_build=$base_src/build
}

mode_arg=""
case "${1:-}" in
  --record | "") mode_arg=${1:-} ;;
  --run-suite) run_suite "${2:?usage: gate.sh --run-suite DIR}"; exit 0 ;;
  # for ci/measure-gate.sh, which interleaves processes of several runs:
  --run-process) run_process "${2:?usage: gate.sh --run-process DIR I}" "${3:?usage: gate.sh --run-process DIR I}"; exit 0 ;;
  --pool) pool "${2:?usage: gate.sh --pool DIR}"; exit 0 ;;
  --print-processes) echo "$processes"; exit 0 ;;
  --print-compare-args) echo "$compare_args"; exit 0 ;;
  *) echo "gate: unknown argument '$1' (use --record, --run-suite DIR or nothing)" >&2; exit 2 ;;
esac
interleaved=""
if [ -n "$base_ref" ] || [ -n "$base_build" ]; then interleaved=1; fi
if [ -n "$interleaved" ] && [ "$mode_arg" = --record ]; then
  echo "gate: --record files a baseline of this build; unset PHASEBENCH_GATE_BASE_REF and PHASEBENCH_GATE_BASE_BUILD" >&2
  exit 2
fi
if [ -n "$given_run" ] && { [ -n "$interleaved" ] || [ "$mode_arg" = --record ]; }; then
  echo "gate: PHASEBENCH_GATE_RUN gates an existing run against a baseline or history; not with --record or a base build" >&2
  exit 2
fi
if [ -n "$given_run" ] && [ ! -f "$given_run/results.csv" ]; then
  echo "gate: PHASEBENCH_GATE_RUN '$given_run' is not a run directory (no results.csv)" >&2
  exit 2
fi
case "$gate_mode" in
  ratio | time) ;;
  *) echo "gate: PHASEBENCH_GATE_MODE must be time or ratio, not '$gate_mode'" >&2; exit 2 ;;
esac

if [ -z "${PHASEBENCH_SKIP_INSTALL:-}" ]; then bash ci/install-deps.sh; fi
if [ -z "${PHASEBENCH_SKIP_BUILD:-}" ]; then PHASEBENCH_BUILD_DIR=$build_dir bash ci/build.sh; fi
if [ -n "$base_ref" ]; then build_base; fi
if [ -n "$interleaved" ] && [ ! -x "$base_build/phasebench" ]; then
  echo "gate: no phasebench in the base build directory '$base_build'" >&2
  exit 2
fi

# The baseline: this machine's, else another machine's (ratios only). Chosen before the run, so a
# missing baseline costs no benchmark time.
fingerprint=$("$pb" baseline fingerprint)
mode=time
baseline=""
if [ "$mode_arg" != --record ] && [ -z "$interleaved" ]; then
  if [ -n "${PHASEBENCH_BASELINE:-}" ]; then
    baseline=$PHASEBENCH_BASELINE
  elif [ -n "${PHASEBENCH_GATE_HISTORY:-}" ]; then
    mkdir -p "$out"
    history_note=$("$pb" history --db "$PHASEBENCH_GATE_HISTORY" window --fingerprint "$fingerprint" \
      --branch "${PHASEBENCH_GATE_HISTORY_BRANCH:-main}" --window "${PHASEBENCH_GATE_HISTORY_WINDOW:-5}" \
      --out "$out/history-window")
    echo "gate: $history_note"
    baseline=$out/history-window/pooled
  elif [ -d "$baselines/$fingerprint" ]; then
    baseline=$baselines/$fingerprint
  else
    baseline=$( (find "$baselines" -mindepth 1 -maxdepth 1 -type d 2> /dev/null || true) | sort | head -n 1)
  fi
  if [ -z "$baseline" ]; then
    echo "gate: no baseline under $baselines/; record one on this machine with: bash ci/gate.sh --record" >&2
    exit 2
  fi
  mode=$gate_mode
  if [ "$mode" = time ] && [ "$("$pb" baseline fingerprint "$baseline")" != "$fingerprint" ]; then
    mode=ratio  # another machine: only within-run ratios are comparable
    echo "gate: no baseline for this machine ($fingerprint); comparing ratios against $baseline"
  fi
fi

# The machine's load around the suite: under load the gate's verdicts are less reliable (the
# false-alarm rates by load: docs/regression-gate.md, measurement 4), so a busy run says so beside
# its verdict, with the figures of the method in use.
load_now() { cut -d' ' -f1 /proc/loadavg 2> /dev/null || echo 0; }
busy_warning() {
  local highest=$1 cores limit measured
  cores=$(nproc)
  limit=${PHASEBENCH_GATE_BUSY_LOAD:-$cores}
  if [ -n "$interleaved" ]; then
    measured="the interleaved gate was measured at a load average of 2.6-5.3 to raise false alarms on 0.4% of rows and to catch every 25% slowdown; heavier load was not measured"
  else
    measured="the gate against a baseline was measured at a load average of 2.6-5.3 to raise false alarms on 1.5% of rows (0.4% with PHASEBENCH_GATE_BASE_REF, which runs the base build interleaved) and to catch every 25% slowdown; heavier load was not measured"
  fi
  if awk -v load="$highest" -v limit="$limit" 'BEGIN { exit !(load > limit) }'; then
    echo "**Warning:** the machine was busy while the suite ran (1-minute load average up to $highest on $cores cores): $measured (docs/regression-gate.md). Rerun on a quiet runner before trusting a timing verdict. Correctness verdicts are unaffected."
  fi
}

load_before=$(load_now)
if [ -n "$interleaved" ]; then
  echo "gate: comparing with the base build $base_build, its processes interleaved with this build's"
  run_interleaved "$base_build"
  compared_base=$out/base/pooled
  compared_new=$out/new/pooled
elif [ -n "$given_run" ]; then
  echo "gate: gating the existing run $given_run (PHASEBENCH_GATE_RUN); no suite run"
  compared_base=$baseline
  compared_new=$given_run
else
  run_suite "$out"
  compared_base=$baseline
  compared_new=$out/pooled
fi
load_after=$(load_now)
busy=""  # a run made elsewhere (PHASEBENCH_GATE_RUN): the load now says nothing about it
if [ -z "$given_run" ]; then busy=$(busy_warning "$(printf '%s\n%s\n' "$load_before" "$load_after" | sort -g | tail -n 1)"); fi

if [ "$mode_arg" = --record ]; then
  refresh=""
  if [ -d "$baselines/$fingerprint" ]; then refresh=--refresh; fi
  # shellcheck disable=SC2086  # options or nothing
  "$pb" baseline record "$out/pooled" --root "$baselines" $refresh $allow_incomplete
  echo "gate: commit $baselines/$fingerprint to make it the baseline of this machine"
  exit 0
fi

# A base built, or a baseline recorded, before phasebench recorded CPU time (samples.csv without
# cpu_ms) has none to compare: the gate falls back to wall time and says so.
fallback=""
base_samples=$compared_base
if [ -d "$base_samples" ]; then base_samples=$base_samples/samples.csv; else base_samples=$(dirname "$base_samples")/samples.csv; fi
has_cpu_times() {  # a cpu_ms column with at least one value (pooling an old run writes it empty)
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "cpu_ms") column = i; next }
           column && $column != "" { found = 1; exit } END { exit !found }' "$1" 2> /dev/null
}
if [[ " $compare_args " == *" --metric cpu "* ]] && ! has_cpu_times "$base_samples"; then
  compare_args=${compare_args/--metric cpu/--metric wall}
  fallback="**Note:** the base ($compared_base) has no CPU times (it was recorded, or its commit built, before phasebench kept them), so this comparison is in wall time, which a busy machine disturbs more (docs/regression-gate.md)."
  echo "gate: $fallback" >&2
fi

mkdir -p "$(dirname "$summary")"
junit_args=()
if [ -n "$junit" ]; then
  mkdir -p "$(dirname "$junit")"
  junit_args=(--junit "$junit")
fi
compare_status=0
# shellcheck disable=SC2086  # compare_args is a list of options
"$pb" compare "$compared_base" "$compared_new" --mode "$mode" $compare_args $allow_incomplete --markdown "$summary" \
  "${junit_args[@]}" || compare_status=$?
if [ -n "$fallback" ] && [ -f "$summary" ]; then printf '\n%s\n' "$fallback" >> "$summary"; fi
if [ -n "${history_note:-}" ] && [ -f "$summary" ]; then printf '\n**Base:** %s\n' "$history_note" >> "$summary"; fi
if [ -n "$busy" ]; then
  echo "gate: $busy" >&2
  if [ -f "$summary" ]; then printf '\n%s\n' "$busy" >> "$summary"; fi
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$summary" ]; then cat "$summary" >> "$GITHUB_STEP_SUMMARY"; fi
echo "gate: runs in $out, summary in $summary${junit:+, JUnit report in $junit}"
exit "$compare_status"
