#!/usr/bin/env python3
"""What states the machine goes through between runs of one build, and whether a probe sees them
(docs/regression-gate.md, "Two runs of one build").

  python3 ci/measure-states.py record DIR RUNS   RUNS short runs back to back, probes of the
                                                 machine (ci/state-probes.cpp) before and after each
  python3 ci/measure-states.py evaluate DIR      each run's workloads per backend against their
                                                 medians, and how each probe follows them

`record` runs `phasebench run $PHASEBENCH_STATES_RUN_ARGS` (default: christoffel and
complex_metric of the geometry suite at the small size, 5 repetitions, about 12 s a run on two
cores). `evaluate` centres each row's log median time on its median over the recording, takes out
each run's median (the run-wide shift), and averages what is left per workload and backend: a
group the machine slowed in one run stands out in its column. Beside it, each probe's Spearman
correlation with each group's offset over the runs. Uses PHASEBENCH_BUILD_DIR (default build).
"""
import csv
import math
import os
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_RUN_ARGS = "--suite geometry --size small --reps 5 --filter christoffel|complex_metric"


def fail(message):
    print(f"measure-states: {message}", file=sys.stderr)
    sys.exit(2)


def probe_into(probes, path):
    with open(path, "w") as out:
        subprocess.run([probes], stdout=out, check=True)


def record(directory, runs):
    build = os.path.join(ROOT, os.environ.get("PHASEBENCH_BUILD_DIR", "build"))
    phasebench = os.path.join(build, "phasebench")
    if not os.access(phasebench, os.X_OK):
        fail(f"no {phasebench}: build it first (bash ci/build.sh)")
    os.makedirs(directory, exist_ok=True)
    probes = os.path.join(directory, "state-probes")
    subprocess.run(["g++", "-std=c++17", "-O2", "-mavx2", "-pthread", os.path.join(ROOT, "ci", "state-probes.cpp"),
                    "-o", probes], check=True)
    run_args = shlex.split(os.environ.get("PHASEBENCH_STATES_RUN_ARGS", DEFAULT_RUN_ARGS))
    with open(os.path.join(directory, "run-args"), "w") as out:
        out.write(" ".join(run_args) + "\n")
    for k in range(1, runs + 1):
        probe_into(probes, os.path.join(directory, f"probes-{k}.before"))
        with open(os.path.join(directory, f"r-{k}.log"), "w") as log:
            status = subprocess.run([phasebench, "run", *run_args, "--out", os.path.join(directory, f"r-{k}")],
                                    stdout=log, stderr=subprocess.STDOUT).returncode
        if status not in (0, 1):  # 1: a check failed, the run is still timed
            fail(f"run {k} failed (exit {status}), see {directory}/r-{k}.log")
        probe_into(probes, os.path.join(directory, f"probes-{k}.after"))
        print(f"run {k}/{runs} done {time.strftime('%H:%M:%S', time.gmtime())} UTC", file=sys.stderr)


def row_times(results_csv):
    times = {}
    with open(results_csv) as f:
        for row in csv.DictReader(f):
            if row["status"] == "OK" and row["median_ms"] and not row.get("disturbed"):
                times[(row["workload"], row["backend"], row["phase"])] = math.log(float(row["median_ms"]))
    return times


def probe_values(directory, k):
    values = {}
    for when in ("before", "after"):
        words = open(os.path.join(directory, f"probes-{k}.{when}")).read().split()
        for name, value in zip(words[::2], words[1::2]):
            values.setdefault(name, []).append(math.log(float(value)))
    return {name: statistics.mean(v) for name, v in values.items()}


def ranks(values):
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    for rank, i in enumerate(order):
        result[i] = rank
    return result


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    norm = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return cov / norm if norm else float("nan")


def evaluate(directory):
    runs = []
    k = 1
    while os.path.exists(os.path.join(directory, f"probes-{k}.after")):
        runs.append((k, row_times(os.path.join(directory, f"r-{k}", "results.csv")), probe_values(directory, k)))
        k += 1
    if len(runs) < 3:
        fail(f"{directory} holds {len(runs)} recorded runs; evaluate needs 3 or more")
    rows = sorted(set.intersection(*(set(times) for _, times, _ in runs)))
    row_median = {row: statistics.median(times[row] for _, times, _ in runs) for row in rows}
    groups = sorted({(workload, backend) for workload, backend, _ in rows})
    offsets = {group: [] for group in groups}
    shifts = []
    for _, times, _ in runs:
        centred = {row: times[row] - row_median[row] for row in rows}
        shift = statistics.median(centred.values())
        shifts.append(shift)
        for group in groups:
            offsets[group].append(statistics.mean(v - shift for row, v in centred.items() if row[:2] == group))
    names = [f"{workload}/{backend}" for workload, backend in groups]
    print(f"runs: phasebench run {open(os.path.join(directory, 'run-args')).read().strip()}; {len(runs)} runs, "
          f"{len(rows)} rows timed in all of them")
    print("log offset of each workload on each backend from its median, beyond the run's median (shift):")
    print(f"{'run':>4} {'shift':>7} " + " ".join(f"{name:>24}" for name in names))
    for i, (k, _, _) in enumerate(runs):
        print(f"{k:>4} {shifts[i]:+7.3f} " + " ".join(f"{offsets[g][i]:+24.3f}" for g in groups))
    print("\nSpearman correlation of each probe (log, mean of before and after) with the shift and each group:")
    print(f"{'probe':>26} {'shift':>7} " + " ".join(f"{name:>24}" for name in names))
    for probe in sorted(runs[0][2]):
        series = [values[probe] for _, _, values in runs]
        print(f"{probe:>26} {spearman(series, shifts):+7.2f} " +
              " ".join(f"{spearman(series, offsets[g]):+24.2f}" for g in groups))


def main(argv):
    if len(argv) == 4 and argv[1] == "record" and argv[3].isdigit() and int(argv[3]) > 0:
        record(os.path.abspath(argv[2]), int(argv[3]))
    elif len(argv) == 3 and argv[1] == "evaluate":
        evaluate(argv[2])
    else:
        fail("usage: python3 ci/measure-states.py record DIR RUNS | evaluate DIR")


if __name__ == "__main__":
    main(sys.argv)
