#!/usr/bin/env python3
"""Mutation testing of phasebench's checks (issue 17, item 3).

Applies one-line mutations to the optimized variants (optimized/*/*.cpp, *.hpp and the CUDA
host-device bodies), one at a time, rebuilds incrementally, and runs the check that should notice:
`phasebench verify --size small --seeds 3` (verify's default seeds, as CI runs it) on the
affected workload (the whole suite for a shared engine file, every suite that uses an
optimized/common/ file), or, for a CUDA host-device file, the
host tests that run its bodies (build/tests/phasebench_tests with a gtest filter). Outcomes:

  caught         verify exits 1 with a FAIL row (or a host test fails an assertion)
  caught-memory  crashed or survived here, but the same check in a sanitizer build (--asan-build,
                 or --asan-mutated) ends with an AddressSanitizer, LeakSanitizer or UBSan report,
                 or a failed bounds check of that build (libstdc++ assertions, Kokkos View bounds),
                 and the unmutated sanitizer build reports nothing for that check (CI runs verify
                 --size small and the unit tests sanitized: ci/sanitize.sh)
  caught-error   verify exits 1 with an ERROR row from an exception the variant threw (a bounds check
                 in the code, a library refusing an argument): verify fails, naming the case
  crashed        verify's worker or the test binary died on a signal with no sanitizer report, or a
                 check timed out or selected nothing
  survived       every check passed
  not-viable     the mutant does not compile (excluded from the score)
  equivalent     listed in ci/mutation-equivalent.txt with a reason (excluded from the score)

The score is (caught + caught-memory + caught-error) / (those + crashed + survived); the summary
also gives the share caught by the numbers check alone. Only the host objects that include the
mutated file are recompiled and the binaries relinked with ninja's own link command (the CUDA
objects, which no device runs here, are not rebuilt); the unmutated objects and binaries are kept
aside and put back with the file's text and mtime after each mutant, also when the script is
interrupted. `--batch N` builds up to N mutants in independent files and checks together (one
link, `--jobs` compiles in parallel). Standard library only.

  ci/mutate.py --list [--sample N --seed S]          show the mutants, run nothing
  ci/mutate.py --sample 120 --seed 2 --batch 2 --asan-build build-asan --out DIR   a full run
  ci/mutate.py --sample 3 --seed 1 --out DIR         a smoke
  ci/mutate.py --rerun DIR/mutants.csv --out DIR2    re-run the survivors and crashes of earlier runs
  ci/mutate.py --rerun CSV... --sanitized-only --asan-mutated COPY/build --out DIR2
                                                     only the sanitized look, in a copy of the tree
  ci/mutate.py --summarize DIR/mutants.csv...        the summary of one or more runs
"""
import argparse
import collections
import csv
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

CPU_BACKENDS = ("reference", "torch", "kokkos", "onednn")
COMMON = "common"  # optimized/common/: what several suites' variants share
CSV_FIELDS = ("key", "file", "line", "kind", "original", "mutated", "outcome", "detail", "seconds")
CAUGHT = ("caught", "caught-memory", "caught-error")
COUNTED = CAUGHT + ("crashed", "survived")
# verify's default: CI's sanitizer stage checks these seeds, and some workloads give a seed its own
# branch (geometry/bayesian's far evidence on seed 3, trainer2/rotor_update's wrap boundary on 2).
VERIFY_SEEDS = "3"
# What CI's sanitizer stage (ci/sanitize.sh) runs with: the first report ends the process.
SANITIZER_OPTIONS = {"ASAN_OPTIONS": "halt_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}


class Mutant:
    def __init__(self, path, line, kind, original, mutated):
        self.path, self.line, self.kind = path, line, kind
        self.original, self.mutated = original, mutated
        digest = hashlib.sha1((original.strip() + "\n" + mutated.strip()).encode()).hexdigest()[:10]
        # Keyed by content, not line number, so an allowlist entry survives edits elsewhere in the file.
        self.key = "%s:%s:%s" % (path, kind, digest)


# ---------------------------------------------------------------- mutation operators

OPERAND = r"(?:[A-Za-z_][\w:.]*(?:->\w+)*(?:\[[^\]]*\]|\([^()]*\))*|\d+(?:\.\d*)?(?:e-?\d+)?f?)"
FLOAT_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*|\d*\.\d+|\d+)(e-?\d+)?(f?)(?![\w.])")


def replace_each(line, pattern, replacement):
    """One mutated line per occurrence of pattern (a regex), each replaced alone."""
    out = []
    for match in re.finditer(pattern, line):
        new = match.expand(replacement) if isinstance(replacement, str) else replacement(match)
        if new is not None and new != match.group(0):
            out.append(line[:match.start()] + new + line[match.end():])
    return out


def swap_operators(line):
    swaps = {" + ": " - ", " - ": " + ", " * ": " / ", " / ": " * ",
             " += ": " -= ", " -= ": " += ", " *= ": " /= ", " /= ": " *= "}
    return replace_each(line, r" (?:\+|-|\*|/)=? ", lambda m: swaps.get(m.group(0)))


def change_comparisons(line):
    swaps = {" < ": " <= ", " <= ": " < ", " > ": " >= ", " >= ": " > "}
    return replace_each(line, r" (?:<=?|>=?) ", lambda m: swaps.get(m.group(0)))


def off_by_one_bounds(line):
    """`i < n;` (a loop bound) -> `i < n - 1;` and `i <= n;`."""
    if "for (" not in line:
        return []
    mutants = []
    for match in re.finditer(r"(\w+) < ([^;]+);", line):
        bound = match.group(2)
        wrapped = bound if re.fullmatch(r"[\w.()\->:]+", bound) else "(" + bound + ")"
        for new in ("%s < %s - 1;" % (match.group(1), wrapped), "%s <= %s;" % (match.group(1), bound)):
            mutants.append(line[:match.start()] + new + line[match.end():])
    return mutants


def drop_terms(line):
    """`a + b` -> `a`: the right operand of a + or - and any * or / chained to it removed."""
    pattern = r" [+-] %s(?: [*/] %s)*" % (OPERAND, OPERAND)
    out = []
    for match in re.finditer(pattern, line):
        before = line[:match.start()]
        if before.rstrip().endswith(("=", "(", ",", "return", "?", ":")):
            continue  # a unary minus, not a term
        out.append(before + line[match.end():])
    return out


def change_constants(line):
    """Floating constants: 1e-5 -> 1e-3, otherwise halved (0.5 -> 0.25); small integers in
    arithmetic (`* 2`, `+ 1`) -> one more."""
    def float_mutant(match):
        number, exponent, suffix = match.groups()
        if exponent:
            power = int(exponent[1:])
            return "%se%d%s" % (number, power + 2 if power < 0 else power - 2, suffix)
        if "." not in number:
            return None
        halved = repr(float(number) / 2)
        return halved + suffix if float(number) != 0 else None

    def integer_mutant(match):
        return "%s%d" % (match.group(1), int(match.group(2)) + 1)

    return (replace_each(line, FLOAT_LITERAL, float_mutant)
            + replace_each(line, r"([*/+-] )(\d)(?![\w.])", integer_mutant))


def swap_indices(line):
    """`[i][j]` -> `[j][i]` and a 2-index view or accessor `v(i, j)` -> `v(j, i)`."""
    out = replace_each(line, r"\[(\w+)\]\[(\w+)\]", r"[\2][\1]")
    out += replace_each(line, r"(\w)\((\w+), (\w+)\)(?!\s*[{;:]\s*$)",
                        lambda m: None if m.group(2) == m.group(3) or m.group(2).isdigit()
                        else "%s(%s, %s)" % (m.group(1), m.group(3), m.group(2)))
    return out


OPERATORS = (("operator", swap_operators), ("bound", off_by_one_bounds),
             ("comparison", change_comparisons), ("drop-term", drop_terms),
             ("constant", change_constants), ("swap-index", swap_indices))


def code_lines(text):
    """(line number, line) for lines of code: comments, preprocessor lines, strings and
    declarations-only lines left out."""
    in_block_comment = False
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if in_block_comment:
            in_block_comment = "*/" not in stripped
            continue
        if stripped.startswith("/*"):
            in_block_comment = "*/" not in stripped
            continue
        if not stripped or stripped.startswith(("//", "#", "*")) or '"' in line:
            continue
        if "static_assert" in line or "template <" in line:
            continue
        yield number, line.split("//")[0].rstrip()


def mutants_of(path, text):
    mutants = []
    lines = text.split("\n")
    for number, code in code_lines(text):
        comment = lines[number - 1][len(code):]
        seen = set()  # `i <= n` is both a bound and a comparison mutant: kept once, under the first kind
        for kind, operator in OPERATORS:
            for mutated in operator(code):
                if mutated not in seen:
                    seen.add(mutated)
                    mutants.append(Mutant(path, number, kind, lines[number - 1], mutated + comment))
    return mutants


# ---------------------------------------------------------------- which check sees a file

INCLUDE = re.compile(r'#include "([^"]+)"')


def includers(root, target, sources):
    """The files among sources that include target, directly or through other headers."""
    found, frontier = set(), {target}
    texts = {s: open(os.path.join(root, s), encoding="utf-8").read() for s in sources}
    while frontier:
        new = set()
        for source, text in texts.items():
            if source in found:
                continue
            names = set(INCLUDE.findall(text))
            if any(f in names or os.path.basename(f) in {os.path.basename(n) for n in names} for f in frontier):
                found.add(source)
                new.add(source)
        frontier = new
    return found


class CheckPlan:
    """For one optimized file: the verify selection and the host tests that exercise it."""

    def __init__(self, verify_args, test_filter, label, suites, backends):
        self.verify_args, self.test_filter, self.label = verify_args, test_filter, label
        self.suites, self.backends = set(suites), set(backends)
        self.objects = {}  # build directory -> objects, from that build's dependency log before a run


def list_sources(root, folder, suffixes):
    out = []
    for directory, _, files in os.walk(os.path.join(root, folder)):
        for name in files:
            if name.endswith(suffixes):
                out.append(os.path.relpath(os.path.join(directory, name), root))
    return sorted(out)


def test_suites_in(root, test_files):
    """gtest filter patterns for the test suites of these files; a parameterized suite's tests are
    named Instance/Suite.Test/N."""
    names = set()
    for path in test_files:
        text = open(os.path.join(root, path), encoding="utf-8").read()
        names.update(re.findall(r"^TEST(?:_F)?\((\w+),", text, re.M))
        names.update("*/" + name for name in re.findall(r"^TEST_P\((\w+),", text, re.M))
    return sorted(names)


def workload_of(stem):
    """What a file's name says it serves: the part before the '-' of <workload>-<backend> and
    <name>-<backend>, the part before the last '_' of a backend-neutral <name>_<role>
    (dynamics_step_bodies: dynamics_step; retrieval_simd_bodies: retrieval_simd, no workload)."""
    name, dash, _ = stem.partition("-")
    return name if dash or "_" not in name else name.rpartition("_")[0]


def plan_for(root, path, workloads, all_sources, tests):
    suite = path.split("/")[1]
    stem = os.path.splitext(os.path.basename(path))[0]
    role = stem.partition("-")[2]
    workload = workload_of(stem)
    is_cuda = "cuda" in role
    variant_users = [s for s in includers(root, path, all_sources) if s.endswith(".cpp")]
    if path.endswith(".cpp"):
        variant_users.append(path)
    backends = sorted({os.path.splitext(os.path.basename(s))[0].partition("-")[2] for s in variant_users}
                      & set(CPU_BACKENDS))
    # optimized/common/ serves several suites: the verify selection covers the suites of its users.
    suites = sorted({s.split("/")[1] for s in variant_users}) if suite == COMMON else [suite]
    verify_args = None
    if backends and not is_cuda:
        # cnn_rollout-*.cpp registers cnn_rollout_autoregressive and its siblings
        workload_part = workload + "(_[^/]*)?" if workload in workloads.get(suite, ()) else "[^/]+"
        backend_part = backends[0] if len(backends) == 1 else "(%s)" % "|".join(backends)
        if len(suites) == 1:
            verify_args = ["--suite", suites[0], "--filter", "^%s/%s/%s/" % (suites[0], workload_part, backend_part)]
        else:
            verify_args = ["--filter", "^(%s)/%s/%s/" % ("|".join(suites), workload_part, backend_part)]
    test_files = sorted(includers(root, path, tests))
    test_filter = None
    if test_files and (is_cuda or verify_args is None or path.endswith((".hpp", ".cuh"))):
        test_filter = ":".join(name + ".*" for name in test_suites_in(root, test_files))
    if verify_args is None and test_filter is None:
        return None
    label = " ".join(verify_args) if verify_args else ""
    if test_filter:
        label += (" + " if label else "") + "tests " + test_filter
    plan = CheckPlan(verify_args, test_filter, label, suites, backends)
    plan.path = path
    return plan


def registered_workloads(all_sources):
    """suite -> workloads: a workload is what has an optimized/<suite>/<workload>-reference.cpp."""
    workloads = collections.defaultdict(set)
    for path in all_sources:
        if path.endswith("-reference.cpp"):
            workloads[path.split("/")[1]].add(os.path.basename(path)[:-len("-reference.cpp")])
    return workloads


# ---------------------------------------------------------------- running one mutant

def run_limited(command, cwd, limit, env=None):
    """(return code or None on timeout, combined output); the whole process group is ended."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True, env=env)
    try:
        output, _ = process.communicate(timeout=limit)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise


def build(args, target, limit):
    command = ["nice", "-n", str(args.nice), "cmake", "--build", args.build, "--target", target,
               "-j", str(args.jobs)]
    return run_limited(command, args.root, limit)


def ninja(args, arguments, limit):
    return run_limited(["nice", "-n", str(args.nice), "ninja", "-C", args.build, "-j", str(args.jobs)]
                       + arguments, args.root, limit)


def dependency_log(args):
    """object -> its recorded dependencies (ninja's deps log), host-compiled objects only: no device
    runs the CUDA objects here, and nvcc would cost minutes per mutant."""
    code, output = run_limited(["ninja", "-C", args.build, "-t", "deps"], args.root, 300)
    deps, current = collections.defaultdict(set), None
    for line in output.splitlines():
        if line and not line.startswith(" "):
            current = line.split(":")[0]
        elif current and line.strip() and not current.endswith(".cu.o"):
            deps[current].add(line.strip())
    return deps


def objects_including(deps, args, path):
    target = os.path.normpath(os.path.join(args.root, path))
    name = os.path.basename(path)
    return sorted(o for o, files in deps.items()
                  if any(f.endswith(name) and os.path.normpath(os.path.join(args.build, f)) == target for f in files))


def last_command(args, target):
    """ninja's own command that makes a target (a binary's link, an object's compile), run by hand
    so that stale CUDA objects are not rebuilt."""
    code, output = run_limited(["ninja", "-C", args.build, "-t", "commands", target], args.root, 120)
    return output.strip().splitlines()[-1]


BACKUP = ".mutate-original"


def back_up(path):
    """Keep a file's unmutated build product (mtime included) to put back afterwards."""
    if os.path.exists(path):
        shutil.copy2(path, path + BACKUP)


def put_back(path):
    if os.path.exists(path + BACKUP):
        os.replace(path + BACKUP, path)
        return True
    return False


def objects_of(args, plan):
    return plan.objects.get(args.build, [])


def binaries_of(args, plan):
    return ([os.path.join(args.build, "phasebench" + args.suffix)] if plan.verify_args else []) + \
           ([os.path.join(args.build, "tests", "phasebench_tests" + args.suffix)] if plan.test_filter else [])


def rebuild(args, objects, binaries, limit):
    """Compile the host objects that include the mutated files and link the binaries the checks run,
    keeping the unmutated objects and binaries aside. (return code or None, output)."""
    if not objects:  # ninja with no target would build everything
        return 1, "no object of this build includes the mutated file"
    for name in objects + [os.path.relpath(b, args.build) for b in binaries]:
        back_up(os.path.join(args.build, name))
    output = ""
    for name in objects:  # ninja's own compile command, run by hand: `ninja OBJECT` would also build
        # the object's order-only dependencies (a test object's: phasebench, relinked with the
        # mutant, and the CUDA objects that include a mutated header), which no backup covers
        code, compiled = run_limited(["nice", "-n", str(args.nice), "sh", "-c", last_command(args, name)],
                                     args.build, limit)
        output += compiled
        if code != 0:
            return code, output
    for binary in binaries:
        code, linked = run_limited(["nice", "-n", str(args.nice), "sh", "-c",
                                    last_command(args, os.path.relpath(binary, args.build))], args.build, limit)
        if code != 0:
            return code, output + linked
    return 0, output


# ---- instrumenting the mutated objects only (--asan-mutated)

# The asan preset's flags, its bounds checks (PHASEBENCH_BOUNDS_CHECKS, CMakeLists.txt) included.
SANITIZE_FLAGS = ("-fsanitize=address,undefined -fno-omit-frame-pointer"
                  " -D_GLIBCXX_ASSERTIONS -DKOKKOS_ENABLE_DEBUG_BOUNDS_CHECK")
INSTRUMENTED = ".asan.o"


def rebuild_instrumented(args, objects, binaries, limit):
    """The mutated objects compiled again with the sanitizer flags (beside the normal ones, as
    OBJECT.asan.o) and the binaries linked from them, the other objects as they are, and the
    sanitizer runtime, into BINARY-asan: the mutated code is checked as in a fully sanitized
    build; the rest is not (a report here is expected there too, not the reverse)."""
    for name in objects:
        command = last_command(args, name)
        command = command.replace(" -MF %s.d " % name, " -MF %s%s.d " % (name, INSTRUMENTED))
        command = command.replace(" -o %s " % name, " %s -g -o %s%s " % (SANITIZE_FLAGS, name, INSTRUMENTED))
        code, output = run_limited(["nice", "-n", str(args.nice), "sh", "-c", command], args.build, limit)
        if code != 0:
            return code, output
    for binary in binaries:
        plain = os.path.relpath(binary, args.build)[:-len(args.suffix)]
        command = last_command(args, plain) + " "
        for name in objects:
            command = command.replace(" %s " % name, " %s%s " % (name, INSTRUMENTED))
        command = command.replace(" -o %s " % plain, " %s -o %s%s " % (SANITIZE_FLAGS, plain, args.suffix))
        code, output = run_limited(["nice", "-n", str(args.nice), "sh", "-c", command], args.build, limit)
        if code != 0:
            return code, output
    return 0, ""


def remove_instrumented(args, objects, binaries):
    for path in [os.path.join(args.build, o + INSTRUMENTED) for o in objects] + list(binaries):
        for stale_file in (path, path + ".d"):
            if os.path.exists(stale_file):
                os.remove(stale_file)


def restore_build(args, objects, binaries):
    """After the original texts and mtimes are back: the kept objects and binaries back too, so the
    build is as it was (CUDA objects current, nothing to recompile); an object without a kept
    original is recompiled (a compiler-cache hit)."""
    missing = []
    for name in objects:
        if not put_back(os.path.join(args.build, name)):
            missing.append(name)
            if os.path.exists(os.path.join(args.build, name)):
                os.remove(os.path.join(args.build, name))
    for binary in binaries:
        put_back(binary)
    if missing:
        ninja(args, missing, args.build_limit)


def error_outcome(detail):
    """An ERROR row is a crash when the worker died or hung; otherwise the variant threw (a bounds
    check, a library's own argument check): verify fails with an ERROR row naming the case, which
    counts as caught (caught-error), apart from a check of the numbers."""
    crashed = "crashed:" in detail or "timed out" in detail or not detail.startswith("ERROR")
    return ("crashed" if crashed else "caught-error"), detail


def judge_verify(code, output):
    rows = re.findall(r"^(OK|FAIL|MISTRUSTED|ERROR|SKIPPED|UNSUPPORTED|CAUGHT)\s+(\S+)\s+seed (\d+)\s+(.*)$",
                      output, re.M)
    summary = re.search(r"verify: (\d+) passed, (\d+) failed", output)
    if code is None:
        return "crashed", "verify timed out"
    failed = [r for r in rows if r[0] in ("FAIL", "MISTRUSTED")]
    if code == 1 and failed:
        return "caught", "%s %s seed %s: %s" % (failed[0][0], failed[0][1], failed[0][2], failed[0][3][:160])
    errors = [r for r in rows if r[0] == "ERROR"]
    if errors:
        return error_outcome("ERROR %s seed %s: %s" % (errors[0][1], errors[0][2], errors[0][3][:160]))
    if code != 0:
        return "crashed", "verify exited %s: %s" % (code, output.strip().splitlines()[-1][:160] if output.strip() else "")
    if not summary or int(summary.group(1)) == 0:
        return "crashed", "verify selected nothing"
    return "survived", "verify: %s passed" % summary.group(1)


def judge_tests(code, output):
    if code is None:
        return "crashed", "host tests timed out"
    failures = re.findall(r"^\[  FAILED  \] (\S+)", output, re.M)
    if code == 0:
        ran = re.search(r"\[==========\] (\d+) tests? from", output)
        if not ran or int(ran.group(1)) == 0:
            return "crashed", "host tests selected nothing"
        return "survived", "host tests: %s passed" % ran.group(1)
    if failures and code == 1:
        return "caught", "host test failed: " + failures[0]
    return "crashed", "host tests exited %s" % code


def check(args, plan):
    """(outcome, detail) of a plan's checks on the built mutant."""
    verdicts = []
    if plan.verify_args:
        command = [os.path.join(args.build, "phasebench"), "verify", "--size", "small", "--seeds", VERIFY_SEEDS,
                   "--hang-timeout", str(args.check_limit)] + plan.verify_args
        verdicts.append(judge_verify(*run_limited(command, args.root, args.check_limit + 30, args.env)))
    if plan.test_filter and not any(v[0] == "caught" for v in verdicts):
        command = [os.path.join(args.build, "tests", "phasebench_tests"), "--gtest_filter=" + plan.test_filter]
        verdicts.append(judge_tests(*run_limited(command, args.root, args.check_limit, args.env)))
    for outcome in COUNTED:
        for verdict in verdicts:
            if verdict[0] == outcome:
                return verdict
    return verdicts[0]


class MutatedTree:
    """Writes a batch of mutants (each in its own file) into the source tree of each build that
    compiles them, and puts the original texts, mtimes, objects and binaries back on every way out,
    SIGTERM included."""

    def __init__(self, plans):
        self.plans = plans
        self.builds = []  # (args of a build, its objects, its binaries), each put back on the way out
        self.originals = {}

    def build_in(self, args, mutants):
        """Writes these mutants into the source tree of the build args names (the sanitized build
        may have its own copy of the tree), then compiles and links them there."""
        for mutant in mutants:
            self.write(os.path.join(args.root, mutant.path), mutant)
        objects = sorted({o for m in mutants for o in objects_of(args, self.plans[m.path])})
        binaries = sorted({b for m in mutants for b in binaries_of(args, self.plans[m.path])})
        self.builds.append((args, objects, binaries))
        return (rebuild_instrumented if args.instrument_mutated else rebuild)(args, objects, binaries,
                                                                               args.build_limit)

    def write(self, path, mutant):
        if path in self.originals:
            return
        text = open(path, encoding="utf-8").read()
        self.originals[path] = (text, os.stat(path).st_mtime)
        lines = text.split("\n")
        lines[mutant.line - 1] = mutant.mutated
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))

    def __enter__(self):
        self.previous = signal.signal(signal.SIGTERM, self.on_signal)
        return self

    def on_signal(self, signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)

    def __exit__(self, *exc):
        try:
            for path, (text, mtime) in self.originals.items():
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                os.utime(path, (mtime, mtime))  # so the CUDA objects that include it stay current
            for args, objects, binaries in self.builds:
                (remove_instrumented if args.instrument_mutated else restore_build)(args, objects, binaries)
        finally:
            signal.signal(signal.SIGTERM, self.previous)
        return False


def stale(args, mutant):
    """The mutated line is not what it was when listed, in the tree or in the sanitized build's copy."""
    for root in {args.root} | ({args.sanitized.root} if args.sanitized else set()):
        lines = open(os.path.join(root, mutant.path), encoding="utf-8").read().split("\n")
        if len(lines) < mutant.line or lines[mutant.line - 1] != mutant.original:
            return True
    return False


def run_batch(args, mutants, plans):
    """[(outcome, detail)] of mutants in independent files and checks, built and linked together."""
    if any(stale(args, m) for m in mutants):
        return [("not-viable", "the line changed since the mutant was listed") if stale(args, m)
                else run_batch(args, [m], plans)[0] for m in mutants]
    with MutatedTree(plans) as tree:
        if args.sanitized_only:  # the outcomes in the build as the earlier run recorded them
            code, results = 0, [args.previous[m.key] for m in mutants]
        else:
            code, output = tree.build_in(args, mutants)
            if code == 0:
                results = [check(args, plans[m.path]) for m in mutants]
        if code == 0 and args.sanitized:
            results = sanitized_look(args.sanitized, tree, mutants, results)
    if code == 0:
        return [confirm_report(args.sanitized, plans[m.path], r) for m, r in zip(mutants, results)]
    if len(mutants) > 1:  # which one does not compile: one at a time
        return [result for m in mutants for result in run_batch(args, [m], plans)]
    if code is None:
        return [("not-viable", "build timed out")]
    errors = [l for l in output.splitlines() if "error" in l]
    return [("not-viable", (errors[0] if errors else "build failed")[:200])]


# ---------------------------------------------------------------- the sanitized second look

# The bounds checks of the sanitizer build (PHASEBENCH_BOUNDS_CHECKS): libstdc++'s assertions
# ("stl_vector.h:1123: ... operator[](size_type) ...: Assertion '__n < this->size()' failed.") and
# Kokkos' View bounds check ("View bounds error of view cell.offset ( 12 < 11 )"), which aborts,
# or throws where no OpenMP region is in the way (verify's ERROR row then carries the text).
BOUNDS_CHECK = re.compile(r"(?:([\w./+-]+\.h(?:pp)?):\d+: .*(Assertion '[^']*' failed)"
                          r"|(View bounds error of view [^\n\"]*?\)))")


def sanitizer_report(output, root):
    """The first AddressSanitizer, LeakSanitizer or UBSan report, or bounds check failure, in output,
    in one line (its kind and the first frame in optimized/, else the first frame), or None."""
    found = re.search(r"ERROR: (AddressSanitizer|LeakSanitizer): ([\w-]+)", output)
    undefined = re.search(r"^(\S+:\d+:\d+: runtime error: .*)$", output, re.M)
    if undefined and (not found or undefined.start() < found.start() or found.group(2) in DEADLY_SIGNALS):
        # UBSan reports (and recovers) before the signal its finding raises: "division by zero",
        # then AddressSanitizer's FPE, which says only that a signal came; the finding is UBSan's
        # (with threads, another thread's UBSan line can come after the signal's report).
        return undefined.group(1).replace(root + "/", "")[:240]
    if found:
        frames = re.findall(r"^\s*#\d+ 0x[0-9a-f]+ in (.+)$", output[found.end():], re.M)
        where = next((f for f in frames if "optimized/" in f), frames[0] if frames else "?")
        return ("%s: %s in %s" % (found.group(1), found.group(2), where)).replace(root + "/", "")[:240]
    found = BOUNDS_CHECK.search(output)
    if found and found.group(3):
        return ("bounds check: " + found.group(3))[:240]
    if found:
        return ("bounds check: %s in %s" % (found.group(2), os.path.basename(found.group(1))))[:240]
    return None


# AddressSanitizer's handler of a fatal signal reports "AddressSanitizer: SEGV on unknown address"
# and the like: the program crashed (a wild access far from any redzone), nothing was detected.
DEADLY_SIGNALS = ("SEGV", "BUS", "FPE", "ILL", "ABRT", "TRAP", "stack-overflow")


def memory_outcome(report, outcome, detail):
    """caught-memory for a sanitizer's finding; a fatal signal it only reported keeps the outcome."""
    kind = re.match(r"\w+Sanitizer: ([\w-]+)", report)
    if kind and kind.group(1) in DEADLY_SIGNALS:
        return outcome, "%s; sanitized: a fatal signal, nothing detected (%s)" % (detail, report)
    return "caught-memory", report


def sanitized_check(sanitized, plan):
    """The sanitizer report of a plan's checks run in the sanitized build, or None: a check that
    ends with a report exits non-zero (halt_on_error)."""
    commands = []
    if plan.verify_args:
        commands.append([os.path.join(sanitized.build, "phasebench" + sanitized.suffix), "verify", "--size", "small",
                         "--seeds", VERIFY_SEEDS, "--hang-timeout", str(sanitized.check_limit)] + plan.verify_args)
    if plan.test_filter:
        commands.append([os.path.join(sanitized.build, "tests", "phasebench_tests" + sanitized.suffix),
                         "--gtest_filter=" + plan.test_filter])
    for command in commands:
        code, output = run_limited(command, sanitized.root, sanitized.check_limit + 30, sanitized.env)
        report = sanitizer_report(output, sanitized.root) if code not in (0, None) else None
        if report:
            return report
    return None


def needs_second_look(result):
    """A mutant no check caught, whose checks ran: crashed (on a signal or past its time) or survived."""
    outcome, detail = result
    return outcome in ("crashed", "survived") and "selected nothing" not in detail


def sanitized_look(sanitized, tree, mutants, results):
    """The mutants no check caught, rebuilt in the sanitized build and checked there: a sanitizer
    report makes a candidate for caught-memory (confirmed by confirm_report once the tree is back)."""
    which = [m for m, r in zip(mutants, results) if needs_second_look(r)]
    if not which:
        return results
    code, output = tree.build_in(sanitized, which)
    out = []
    for mutant, result in zip(mutants, results):
        if mutant not in which:
            out.append(result)
        elif code != 0:
            out.append((result[0], result[1] + "; the sanitized build failed"))
        else:
            report = sanitized_check(sanitized, tree.plans[mutant.path])
            out.append(("sanitizer-report", report, result) if report else
                       (result[0], result[1] + "; sanitized: no report"))
    return out


def confirm_report(sanitized, plan, result):
    """A report counts (caught-memory) only when the same sanitized checks of the unmutated build
    report nothing (checked once per selection, on the restored build)."""
    if result[0] != "sanitizer-report":
        return result
    _, report, (outcome, detail) = result
    if plan.label not in sanitized.clean:
        binaries = binaries_of(sanitized, plan)
        if sanitized.instrument_mutated:  # the unmutated objects with the sanitizer runtime
            rebuild_instrumented(sanitized, [], binaries, sanitized.build_limit)
        sanitized.clean[plan.label] = sanitized_check(sanitized, plan)
        if sanitized.instrument_mutated:
            remove_instrumented(sanitized, [], binaries)
    unmutated = sanitized.clean[plan.label]
    if unmutated:
        return outcome, "%s; the unmutated sanitized build reports too: %s" % (detail, unmutated)
    return memory_outcome(report, outcome, detail)


def conflicts(plan, other):
    """Two mutants can share a build when no object, binary check or selected suite/backend overlaps."""
    if set(sum(plan.objects.values(), [])) & set(sum(other.objects.values(), [])):
        return True
    same_suite = bool(plan.suites & other.suites)
    if plan.test_filter or other.test_filter:  # a host test may run any variant of its suite
        return same_suite or bool(plan.test_filter and other.test_filter)
    return same_suite and (plan.backends & other.backends or not plan.backends or not other.backends)


def batches(mutants, plans, size):
    pending, out = list(mutants), []
    while pending:
        batch = [pending.pop(0)]
        for candidate in list(pending):
            if len(batch) == size:
                break
            if not any(conflicts(plans[candidate.path], plans[m.path]) for m in batch):
                batch.append(candidate)
                pending.remove(candidate)
        out.append(batch)
    return out


# ---------------------------------------------------------------- selection, output

def load_allowlist(path):
    entries = {}
    if not os.path.exists(path):
        return entries
    for number, line in enumerate(open(path, encoding="utf-8"), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, reason = line.partition(" ")
        if not reason.strip():
            sys.exit("mutate.py: %s:%d: an equivalent mutant needs a reason after its key" % (path, number))
        entries[key] = reason.strip()
    return entries


def group_of(mutant):
    return group_of_path(mutant.path)


def group_of_path(path):
    parts = path.split("/")
    role = os.path.splitext(parts[2])[0].partition("-")[2]
    backend = next((b for b in CPU_BACKENDS + ("cuda",) if b in role), "shared")
    return parts[1], backend


def interleave_kinds(members, rng):
    """A seeded shuffle of each kind, dealt kind by kind, so the commonest kind does not crowd out the rest."""
    by_kind = collections.defaultdict(list)
    for mutant in members:
        by_kind[mutant.kind].append(mutant)
    decks = []
    for kind in sorted(by_kind):
        rng.shuffle(by_kind[kind])
        decks.append(by_kind[kind])
    dealt = []
    while any(decks):
        for deck in decks:
            if deck:
                dealt.append(deck.pop())
    return dealt[::-1]  # popped from the end by sample()


def sample(mutants, count, seed):
    """Spread over (suite, backend) groups: a seeded shuffle inside each group, then round-robin."""
    rng = random.Random(seed)
    groups = collections.defaultdict(list)
    for mutant in mutants:
        groups[group_of(mutant)].append(mutant)
    queues = []
    for key in sorted(groups):
        queues.append(interleave_kinds(groups[key], rng))
    picked = []
    while len(picked) < count and any(queues):
        for queue in queues:
            if queue and len(picked) < count:
                picked.append(queue.pop())
    return picked


def summary_text(rows, elapsed):
    counts = collections.Counter(r["outcome"] for r in rows)
    viable = sum(counts[o] for o in COUNTED)
    share = lambda n: 100.0 * n / viable if viable else 0.0
    caught = sum(counts[o] for o in CAUGHT)
    lines = ["mutants: %d  %s" % (len(rows), "  ".join("%s %d" % (o, counts[o]) for o in
                                                      COUNTED + ("not-viable", "equivalent", "line-changed"))),
             "score: %d / %d viable non-equivalent = %.1f%% caught by verify's checks, the sanitized "
             "run included (caught + caught-memory + caught-error)" % (caught, viable, share(caught)),
             "by the numbers check alone (caught): %d / %d = %.1f%%" % (
                 counts["caught"], viable, share(counts["caught"])),
             "without the sanitized run (caught + caught-error): %d / %d = %.1f%%" % (
                 counts["caught"] + counts["caught-error"], viable,
                 share(counts["caught"] + counts["caught-error"])),
             "time: %.0f s of mutant runs" % elapsed, "by suite and backend:"]
    by_group = collections.defaultdict(collections.Counter)
    for r in rows:
        by_group["%s %s" % group_of_path(r["file"])][r["outcome"]] += 1
    for key in sorted(by_group):
        lines.append("  %-22s %s" % (key, " ".join("%s %d" % kv for kv in sorted(by_group[key].items()))))
    for outcome in ("survived", "crashed", "caught-memory", "caught-error", "equivalent", "line-changed"):
        listed = [r for r in rows if r["outcome"] == outcome]
        if listed:
            lines.append("%s:" % outcome)
            for r in listed:
                lines.append("  %s:%s %s [%s]  `%s` -> `%s`  (%s)" % (r["file"], r["line"], r["kind"], r["key"],
                             r["original"], r["mutated"], r["detail"]))
    return "\n".join(lines) + "\n"


def candidate_files(root):
    files = []
    for path in list_sources(root, "optimized", (".cpp", ".hpp", ".cuh")):
        files.append(path)
    return files


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=here, help="the source tree to mutate (default: this checkout)")
    parser.add_argument("--build", help="its configured build directory (default: ROOT/build)")
    parser.add_argument("--sample", type=int, default=120, help="how many mutants (default 120)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the sample (default 1)")
    parser.add_argument("--files", default="", help="only files whose path matches this regex")
    parser.add_argument("--rerun", nargs="+", metavar="CSV", help="mutants.csv files: run their survived and "
                        "crashed mutants again (a mutant in several with its outcome in the last)")
    parser.add_argument("--asan-build", metavar="DIR", help="a configured sanitizer build (preset asan, "
                        "CUDA off, phasebench and phasebench_tests built): a mutant that crashes or survives "
                        "is rebuilt there and checked again; a sanitizer report makes it caught-memory")
    parser.add_argument("--shard", default="1/1", help="I/N: run every Nth sampled mutant from the Ith "
                        "(N copies of the tree, each with its own build, run side by side)")
    parser.add_argument("--keys", nargs="+", metavar="KEY", help="run these mutants (keys as --list prints them)")
    parser.add_argument("--skip", nargs="+", default=[], metavar="CSV",
                        help="leave out the mutants already in these mutants.csv(.partial) files (to resume)")
    parser.add_argument("--summarize", nargs="+", metavar="CSV", help="print the summary of mutants.csv files "
                        "(a mutant in several counts with its outcome in the last)")
    parser.add_argument("--list", action="store_true", help="list the sampled mutants and run nothing")
    parser.add_argument("--out", help="directory to create for mutants.csv and summary.txt")
    parser.add_argument("--allowlist", help="equivalent mutants (default: ci/mutation-equivalent.txt)")
    parser.add_argument("--build-limit", type=int, default=600, help="seconds per rebuild (default 600)")
    parser.add_argument("--check-limit", type=int, default=240, help="seconds per check (default 240)")
    parser.add_argument("--jobs", type=int, default=2, help="compile jobs (default 2)")
    parser.add_argument("--batch", type=int, default=1, help="mutants in independent files and checks built "
                        "together, one link for all (default 1)")
    parser.add_argument("--asan-mutated", metavar="DIR", help="instead of --asan-build: a normal build (of "
                        "this tree or a copy) in which only the mutated objects are compiled with the sanitizer "
                        "flags and linked with the sanitizer runtime into phasebench-asan, phasebench_tests-asan")
    parser.add_argument("--sanitized-only", action="store_true", help="with --rerun and --asan-build: take "
                        "the outcomes in the normal build from the CSVs and run only the sanitized look")
    parser.add_argument("--nice", type=int, default=10)
    args = parser.parse_args()
    args.root = os.path.abspath(args.root)
    args.build = os.path.abspath(args.build or os.path.join(args.root, "build"))
    args.allowlist = args.allowlist or os.path.join(args.root, "ci", "mutation-equivalent.txt")
    args.env, args.sanitized, args.suffix, args.instrument_mutated = None, None, "", False
    if args.asan_build and args.asan_mutated:
        parser.error("--asan-build and --asan-mutated are two ways of one thing: give one")
    if args.asan_build or args.asan_mutated:
        args.sanitized = argparse.Namespace(**vars(args))
        args.sanitized.build = os.path.abspath(args.asan_build or args.asan_mutated)
        args.sanitized.instrument_mutated = bool(args.asan_mutated)
        args.sanitized.suffix = "-asan" if args.asan_mutated else ""
        args.sanitized.env = dict(os.environ, **SANITIZER_OPTIONS)
        args.sanitized.root = source_dir_of(args.sanitized.build) or args.root
        args.sanitized.clean = {}  # selection -> the unmutated sanitized build's report (None: clean)
    if args.sanitized_only and not (args.rerun and args.sanitized):
        parser.error("--sanitized-only needs --rerun and --asan-build or --asan-mutated")
    if args.sample < 1:
        parser.error("--sample must be at least 1")
    shard = re.fullmatch(r"(\d+)/(\d+)", args.shard)
    if not shard or not 1 <= int(shard.group(1)) <= int(shard.group(2)):
        parser.error("--shard takes I/N with 1 <= I <= N, e.g. 2/2")
    args.shard = (int(shard.group(1)), int(shard.group(2)))
    if args.summarize:
        return args
    if not args.list and not args.out:
        parser.error("--out DIR is required unless --list")
    if args.out and os.path.exists(args.out):
        parser.error("--out %s exists; results are never overwritten" % args.out)
    for build in [args] + ([args.sanitized] if args.sanitized else []):
        if not args.list and not os.path.exists(os.path.join(build.build, "phasebench")):
            parser.error("no phasebench in %s: configure and build first (README)" % build.build)
    return args


def source_dir_of(build_dir):
    """The source tree a configured build compiles (CMAKE_HOME_DIRECTORY in its CMakeCache.txt)."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.exists(cache):
        return None
    found = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", open(cache, encoding="utf-8").read(), re.M)
    return os.path.abspath(found.group(1)) if found else None


def select_mutants(args, plans):
    everything = []
    for path in sorted(plans):
        everything += mutants_of(path, open(os.path.join(args.root, path), encoding="utf-8").read())
    done = {r["key"] for path in args.skip for r in csv.DictReader(open(path, encoding="utf-8"))}
    if args.keys:  # --skip applies here too: a run of given keys resumes as a sampled one does
        return [m for m in everything if m.key in set(args.keys) and m.key not in done]
    if args.rerun:
        wanted = {r["key"]: (r["outcome"], r["detail"]) for r in latest_rows(args.rerun)
                  if r["outcome"] in ("survived", "crashed")}
        args.previous = wanted
        return [m for m in everything if m.key in wanted and m.key not in done]
    picked = sample(everything, args.sample, args.seed)
    index, count = args.shard
    return [m for m in picked[index - 1::count] if m.key not in done]


def check_plans(args):
    """path -> CheckPlan for every candidate file some check here can run (a device-only wrapper
    such as a .cu launch file has none and is left out)."""
    all_sources = list_sources(args.root, "optimized", (".cpp", ".hpp", ".cuh", ".cu"))
    tests = list_sources(args.root, "tests", (".cpp",))
    workloads = registered_workloads(all_sources)
    plans = {}
    for path in candidate_files(args.root):
        if re.search(args.files, path):
            plan = plan_for(args.root, path, workloads, all_sources, tests)
            if plan is not None:
                plans[path] = plan
    return plans


def row_of(mutant, outcome, detail, seconds):
    return dict(key=mutant.key, file=mutant.path, line=mutant.line, kind=mutant.kind,
                original=mutant.original.strip(), mutated=mutant.mutated.strip(), outcome=outcome,
                detail=detail, seconds="%.0f" % seconds)


def run_all(args, mutants, plans, allowlist):
    os.makedirs(args.out)
    partial = os.path.join(args.out, "mutants.csv.partial")
    rows, started = [], time.time()
    with open(partial, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        index = 0
        for batch in batches([m for m in mutants if m.key not in allowlist], plans, args.batch):
            began = time.time()
            results = run_batch(args, batch, plans)
            for mutant, (outcome, detail) in zip(batch, results):
                index += 1
                row = row_of(mutant, outcome, detail, (time.time() - began) / len(batch))
                rows.append(row)
                writer.writerow(row)
                f.flush()
                print("[%d/%d] %-10s %s:%d %s  %s" % (index, len(mutants), outcome, mutant.path, mutant.line,
                                                      mutant.kind, detail[:120]), flush=True)
        for mutant in mutants:
            if mutant.key in allowlist:
                row = row_of(mutant, "equivalent", allowlist[mutant.key], 0)
                rows.append(row)
                writer.writerow(row)
    # Back to the unmutated build, so the tree's binaries match its sources.
    for built in ([] if args.sanitized_only else [args]) + ([args.sanitized] if args.sanitized else []):
        build(built, "phasebench_tests" if any(plans[m.path].test_filter for m in mutants) else "phasebench",
              args.build_limit)
    os.replace(partial, os.path.join(args.out, "mutants.csv"))
    return rows, time.time() - started


def latest_rows(paths):
    """The rows of mutants.csv files, a mutant run again (after a fix) with its latest outcome; rows of
    older runs read with today's outcomes (an ERROR row from a throw was "crashed", then "error")."""
    latest = {}
    for path in paths:
        for r in csv.DictReader(open(path, encoding="utf-8")):
            latest.pop(r["key"], None)
            latest[r["key"]] = r
    for r in latest.values():
        if r["outcome"] in ("crashed", "error"):
            r["outcome"] = error_outcome(r["detail"])[0]
        if r["outcome"] == "caught-memory":  # recorded before fatal signals were told apart
            r["outcome"], r["detail"] = memory_outcome(r["detail"], "crashed", "crashed")
    return list(latest.values())


def line_still_there(root, row):
    """Whether the mutated line is still in its file: a fix may have rewritten it (its mutants are
    then new ones, with other keys), and the old mutant no longer exists to be counted."""
    path = os.path.join(root, row["file"])
    return os.path.exists(path) and row["original"] in {l.strip() for l in open(path, encoding="utf-8")}


def main():
    args = parse_args()
    allowlist = load_allowlist(args.allowlist)
    if args.summarize:
        rows = latest_rows(args.summarize)
        for r in rows:  # the allowlist as it is now: an entry added after the run applies
            if not line_still_there(args.root, r):
                r["outcome"], r["detail"] = "line-changed", "was %s: %s" % (r["outcome"], r["detail"])
            elif r["key"] in allowlist and r["outcome"] != "not-viable":
                r["outcome"], r["detail"] = "equivalent", allowlist[r["key"]]
        print(summary_text(rows, sum(float(r["seconds"]) for r in rows)))
        return score_status(rows)
    plans = check_plans(args)
    mutants = select_mutants(args, plans)
    if args.list:
        for m in mutants:
            print("%s:%d %s [%s]\n  - %s\n  + %s\n  check: %s" % (m.path, m.line, m.kind, m.key,
                  m.original.strip(), m.mutated.strip(), plans[m.path].label))
        print("%d mutants" % len(mutants))
        return 0
    for build in [args] + ([args.sanitized] if args.sanitized else []):
        deps = dependency_log(build)
        for plan in plans.values():
            plan.objects[build.build] = objects_including(deps, build, plan.path)
    rows, elapsed = run_all(args, mutants, plans, allowlist)
    text = summary_text(rows, elapsed)
    with open(os.path.join(args.out, "summary.txt.tmp"), "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(os.path.join(args.out, "summary.txt.tmp"), os.path.join(args.out, "summary.txt"))
    print(text)
    return score_status(rows)


def score_status(rows):
    """0 when at least 95% of the viable non-equivalent mutants are caught (in any of the three ways)."""
    viable = sum(1 for r in rows if r["outcome"] in COUNTED)
    caught = sum(1 for r in rows if r["outcome"] in CAUGHT)
    return 0 if caught >= 0.95 * viable else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("mutate.py: interrupted; the mutated file was restored")
