#!/usr/bin/env bash
# Submits a sharded phasebench run to Slurm (docs/fleets.md): a job array with one task per shard
# (shards.sbatch) and the merge job that runs after all of them have ended, however they ended
# (merge.sbatch, `--dependency=afterany`). Prints the two job ids and where the merged run will be.
#
#   ci/slurm/submit.sh [--shards N] [--runs DIR] [--phasebench PATH] [--history DB]
#                      [--sbatch 'OPTIONS'] [-- RUN_OPTIONS...]
#   ci/slurm/submit.sh --finish DIR [--history DB] [--sbatch 'OPTIONS']
#
#   --shards N         how many shards (default 4): array tasks 1..N, `run --shard i/N`
#   --runs DIR         where the shards (DIR/shard-<i>), the merged run (DIR/merged-<merge job id>)
#                      and the jobs' logs (DIR/logs) go, on a file system every node sees; created,
#                      must not exist (default results/runs/slurm-<UTC time>)
#   --phasebench PATH  the binary (default build/phasebench), built once on a node of the kind
#                      that runs the shards, where every node sees it
#   --history DB       add the merged run, when complete, to this results history (a SQLite file or
#                      a postgresql:// URL, docs/history.md)
#   --sbatch OPTIONS   further sbatch options for both jobs, e.g. '--partition=cpu --constraint=epyc'
#   -- RUN_OPTIONS     options of `phasebench run`, the same for every shard (e.g. --suite trainer2
#                      --size small); not --out, --shard or --resume, which the jobs set
#   --finish DIR       submit again the shards of DIR that are missing or incomplete (a cancelled or
#                      failed task: an incomplete shard is resumed, a missing one run), with the
#                      options DIR was submitted with, and a new merge after them
#
# Exit 0 when both jobs are submitted; 2 bad arguments; sbatch's exit code when it refuses a job.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/ci/slurm

usage_error() {
  echo "submit: $1 (see the top of ci/slurm/submit.sh for the options)" >&2
  exit 2
}

shards="" runs="" phasebench="" history="" sbatch_options="" finish=""
run_options=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shards | --runs | --phasebench | --history | --sbatch | --finish)
      [ $# -ge 2 ] || usage_error "$1 needs a value"
      case "$1" in
        --shards) shards=$2 ;;
        --runs) runs=$2 ;;
        --phasebench) phasebench=$2 ;;
        --history) history=$2 ;;
        --sbatch) sbatch_options=$2 ;;
        --finish) finish=$2 ;;
      esac
      shift 2
      ;;
    --)
      shift
      run_options=("$@")
      break
      ;;
    *) usage_error "unknown argument '$1' (options of phasebench run go after --)" ;;
  esac
done
if ! command -v sbatch > /dev/null; then
  echo "submit: sbatch is not on PATH: submit from a machine of the Slurm cluster" >&2
  exit 2
fi

# The submission is saved in DIR/submit.args (NUL-separated: the binary, the shard count, the run
# options), which --finish reads back.
if [ -n "$finish" ]; then
  if [ -n "$shards$runs$phasebench" ] || [ ${#run_options[@]} -gt 0 ]; then
    usage_error "--finish takes the options DIR was submitted with; give only --history and --sbatch"
  fi
  [ -f "$finish/submit.args" ] || usage_error "'$finish' is not a directory of ci/slurm/submit.sh (no submit.args)"
  runs=$(cd "$finish" && pwd)
  readarray -d '' saved < "$runs/submit.args"
  [ ${#saved[@]} -ge 2 ] || usage_error "$runs/submit.args is damaged"
  phasebench=${saved[0]} shards=${saved[1]}
  run_options=("${saved[@]:2}")
else
  shards=${shards:-4} phasebench=${phasebench:-$repo/build/phasebench}
  [[ "$shards" =~ ^[1-9][0-9]*$ ]] || usage_error "--shards must be a positive whole number, not '$shards'"
  for option in "${run_options[@]}"; do
    case "$option" in
      --out | --out=* | --shard | --shard=* | --resume | --resume=*)
        usage_error "$option is set by the jobs (each shard runs into DIR/shard-<i>); leave it out" ;;
    esac
  done
  [ -x "$phasebench" ] || usage_error "no phasebench binary at '$phasebench' (build it: bash ci/build.sh --main)"
  phasebench=$(cd "$(dirname "$phasebench")" && pwd)/$(basename "$phasebench")
  runs=${runs:-$repo/results/runs/slurm-$(date -u +%Y%m%dT%H%M%SZ)}
  [ ! -e "$runs" ] || usage_error "--runs $runs already exists; phasebench never overwrites results"
  mkdir -p "$runs"
  runs=$(cd "$runs" && pwd)
  printf '%s\0' "$phasebench" "$shards" "${run_options[@]}" > "$runs/submit.args"
fi
mkdir -p "$runs/logs"
# A SQLite file named relative to here, made absolute for the merge job.
if [ -n "$history" ] && [[ "$history" != *://* ]] && [[ "$history" != /* ]]; then history=$PWD/$history; fi

# The shards to run: all of them, or (--finish) those not written or written incomplete.
tasks=""
for ((index = 1; index <= shards; index++)); do
  if [ -z "$finish" ] || [ ! -e "$runs/shard-$index" ] || [ -d "$runs/shard-$index/resume" ]; then
    tasks+=${tasks:+,}$index
  fi
done

read -r -a extra <<< "$sbatch_options"
dependency=()
if [ -n "$tasks" ]; then
  array_job=$(sbatch --parsable "${extra[@]}" --array="$tasks" --output="$runs/logs/shard-%a.log" \
    "$here/shards.sbatch" "$phasebench" "$runs" "$shards" "${run_options[@]}")
  array_job=${array_job%%;*}  # "id;cluster" on a federation
  echo "shards: job $array_job, array tasks $tasks of $shards, logs $runs/logs/shard-<i>.log"
  dependency=(--dependency="afterany:$array_job")
else
  echo "shards: all $shards shards of $runs are written; merging only"
fi
merge_job=$(sbatch --parsable "${extra[@]}" "${dependency[@]}" --output="$runs/logs/merge-%j.log" \
  "$here/merge.sbatch" "$phasebench" "$runs" "$shards" ${history:+"$history"})
merge_job=${merge_job%%;*}
echo "merge: job $merge_job, after the shards end (afterany), log $runs/logs/merge-$merge_job.log"
echo "merged run: $runs/merged-$merge_job"
