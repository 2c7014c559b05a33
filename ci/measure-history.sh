#!/usr/bin/env bash
# How many runs per second a results history takes (docs/history.md, "Many writers, one history").
#
#   bash ci/measure-history.sh RUN [RUNS] [REPEATS]
#
# Makes RUNS (default 32) copies of the run directory RUN, each under its own run id, and times
# `phasebench history add` of all of them, one process a run as CI jobs add theirs, by 1 writer
# (the processes one after another) and by 8 writers (8 such sequences at once, RUNS/8 runs
# each), into a new SQLite file and into a new
# database on a throwaway PostgreSQL server (initdb on a temporary directory, a unix socket, no TCP
# port, default settings; skipped where /usr/lib/postgresql/*/bin is missing). The schema is made
# before the clock starts. Each case is repeated REPEATS (default 3) times on a fresh database;
# prints each time and the median runs/s and rows/s (rows: results and samples rows of the runs).
# Uses PHASEBENCH_BUILD_DIR (default build); PHASEBENCH_MEASURE_STORES=sqlite leaves PostgreSQL out.
set -euo pipefail
run=${1:?usage: measure-history.sh RUN [RUNS] [REPEATS]}
count=${2:-32}
repeats=${3:-3}
pb=$(cd "${PHASEBENCH_BUILD_DIR:-build}" && pwd)/phasebench
writer_counts=(1 8)
(( count % 8 == 0 )) || { echo "RUNS must be a multiple of 8" >&2; exit 2; }

scratch=$(mktemp -d /tmp/pbhist-XXXXXX)
chmod 755 "$scratch"  # the server user reaches its directory in it
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
as_server_user() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  if [ -f "$scratch/pg/data/postmaster.pid" ]; then
    as_server_user "$pg_bin/pg_ctl" -D "$scratch/pg/data" -m fast stop > /dev/null 2>&1 || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# The copies: the run's files with its id replaced by id-NNNN wherever it appears.
id=$(sed -n '2s/,.*//p' "$run/results.csv")
[ -n "$id" ] || { echo "$run/results.csv has no rows" >&2; exit 2; }
rows=$(( $(wc -l < "$run/results.csv") - 1 + $(wc -l < "$run/samples.csv") - 1 ))
for i in $(seq -w 1 "$count"); do
  mkdir -p "$scratch/runs/$i"
  for file in results.csv samples.csv machine.json catalog.json benchmark.json; do
    [ -f "$run/$file" ] && sed "s/$id/$id-$i/g" "$run/$file" > "$scratch/runs/$i/$file"
  done
done
echo "run $run: $rows rows (results and samples) each, $count copies, $(nproc) CPUs, $(uname -n)"

# The seconds $3 writers take to add every copy into history $2 (store $1), checked afterwards.
time_adds() {
  local url=$2 writers=$3 start end w
  "$pb" history --db "$url" list > /dev/null
  start=$(date +%s.%N)
  for ((w = 0; w < writers; ++w)); do
    # Writer w adds every copy whose number is w modulo the writer count, one process a run (as
    # a CI job adds its run), one after another.
    ls -d "$scratch"/runs/* | awk -v w="$w" -v n="$writers" '(NR - 1) % n == w' |
      xargs -n 1 "$pb" history --db "$url" add > "$scratch/writer-$w.out" 2>&1 &
  done
  if ! wait; then
    cat "$scratch"/writer-*.out >&2
    exit 1
  fi
  end=$(date +%s.%N)
  local stored
  stored=$("$pb" history --db "$url" list | tail -n +2 | wc -l)
  [ "$stored" = "$count" ] || { echo "$1: $stored runs stored, not $count" >&2; exit 1; }
  echo "$end - $start" | bc -l
}

stores=(sqlite)
if [ "${PHASEBENCH_MEASURE_STORES:-sqlite postgresql}" = sqlite ]; then
  :
elif [ -n "$pg_bin" ]; then
  mkdir -p "$scratch/pg"
  [ "$(id -u)" = 0 ] && chown postgres: "$scratch/pg"
  as_server_user "$pg_bin/initdb" -D "$scratch/pg/data" -U phasebench --auth=trust -E UTF8 > /dev/null
  as_server_user "$pg_bin/pg_ctl" -D "$scratch/pg/data" -l "$scratch/pg/log" -w \
    -o "-k $scratch/pg -c listen_addresses=''" start > /dev/null
  stores+=(postgresql)
else
  echo "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin): SQLite only"
fi

database=0
printf '%-10s %7s %8s %10s  %s\n' store writers runs/s rows/s "seconds per repetition"
for store in "${stores[@]}"; do
  for writers in "${writer_counts[@]}"; do
    times=()
    for ((r = 0; r < repeats; ++r)); do
      database=$((database + 1))
      if [ "$store" = sqlite ]; then
        url=$scratch/history-$database.sqlite
      else
        as_server_user "$pg_bin/psql" -h "$scratch/pg" -U phasebench -d postgres -q -c "CREATE DATABASE h$database"
        url="postgresql://phasebench@/h$database?host=$scratch/pg"
      fi
      times+=("$(time_adds "$store" "$url" "$writers")")
    done
    median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }')
    printf '%-10s %7d %8.1f %10.0f  %s\n' "$store" "$writers" "$(echo "$count / $median" | bc -l)" \
      "$(echo "$count * $rows / $median" | bc -l)" "$(printf '%.2f ' "${times[@]}")"
  done
done
