#!/usr/bin/env python3
"""ci/mutate.py's reading of a sanitized check's output: which report makes a mutant caught-memory
and which crash stays a crash (docs/reliability-mutation.md); and its choice of the mutants to run
when a run resumes (--skip), with or without --keys."""
import argparse
import csv
import importlib.util
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("mutate", os.path.join(HERE, "..", "ci", "mutate.py"))
mutate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutate)

ROOT = "/src/phasebench"
FPE = ("AddressSanitizer:DEADLYSIGNAL\n==1==ERROR: AddressSanitizer: FPE on unknown address 0x1 (pc 0x1 T1)\n"
       "    #0 0x1 in f(long) /src/phasebench/optimized/a/b-bodies.hpp:12\n")
DIVISION = "/src/phasebench/optimized/a/b-bodies.hpp:12:40: runtime error: division by zero\n"
OVERFLOW = ("==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x2\n"
            "    #0 0x2 in g() /src/phasebench/optimized/a/c.cpp:7\n")


def outcome(output):
    report = mutate.sanitizer_report(output, ROOT)
    return mutate.memory_outcome(report, "crashed", "died") if report else ("crashed", "died")


class SanitizerReport(unittest.TestCase):
    def test_a_fatal_signal_alone_is_a_crash(self):
        self.assertEqual(outcome(FPE)[0], "crashed")

    def test_ubsans_finding_counts_before_or_after_the_signals_report(self):
        for output in (DIVISION + FPE, FPE + DIVISION):  # threads: either order
            self.assertEqual(outcome(output),
                             ("caught-memory", "optimized/a/b-bodies.hpp:12:40: runtime error: division by zero"))

    def test_an_address_finding_comes_before_a_later_ubsan_line(self):
        self.assertEqual(outcome(OVERFLOW + DIVISION),
                         ("caught-memory", "AddressSanitizer: heap-buffer-overflow in g() optimized/a/c.cpp:7"))

    def test_nothing_reported_is_none(self):
        self.assertIsNone(mutate.sanitizer_report("verify: 3 passed\n", ROOT))


class ResumedSelection(unittest.TestCase):
    def test_skip_leaves_out_the_mutants_already_run_also_with_keys(self):
        with tempfile.TemporaryDirectory() as root:
            path = "optimized/a/b.hpp"
            os.makedirs(os.path.join(root, "optimized", "a"))
            text = "inline int f(int a, int b) { return a + b * 2; }\n"
            with open(os.path.join(root, path), "w", encoding="utf-8") as out:
                out.write(text)
            keys = [m.key for m in mutate.mutants_of(path, text)]
            self.assertGreaterEqual(len(keys), 3)
            done = os.path.join(root, "mutants.csv")
            with open(done, "w", encoding="utf-8", newline="") as out:
                writer = csv.DictWriter(out, fieldnames=["key", "outcome"])
                writer.writeheader()
                writer.writerow({"key": keys[0], "outcome": "caught"})
            args = argparse.Namespace(root=root, keys=keys[:3], skip=[done], rerun=None, sample=100, seed=1,
                                      shard=(1, 1))
            self.assertEqual([m.key for m in mutate.select_mutants(args, {path: None})], keys[1:3])
            args.keys = None
            self.assertNotIn(keys[0], [m.key for m in mutate.select_mutants(args, {path: None})])


if __name__ == "__main__":
    sys.exit(unittest.main())
