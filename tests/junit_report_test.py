#!/usr/bin/env python3
"""The JUnit XML of `verify --junit` and `compare --junit`, read as GitLab's and Jenkins' test
reports read it (an XML parser, the counts in the attributes, a message on every failure, error and
skip).

  junit_report_test.py PHASEBENCH WORKDIR   verify end to end: a drifting variant fails with its
                                            error and tolerance, a crash is an error, the known bug
                                            CAUGHT passes, CUDA rows without a GPU are skipped
  junit_report_test.py --check FILE         the structure only; prints each case as
                                            "<outcome>\\t<classname>\\t<name>\\t<message>" in UTF-8,
                                            tabs and line breaks inside a field as \\t and \\n (the
                                            GoogleTest tests of compare's report read these)
"""
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

OUTCOMES = ("failure", "error", "skipped")


class Bad(Exception):
    pass


def require(condition, what):
    if not condition:
        raise Bad(what)


def outcome_of(case):
    """'passed', or the tag of the one failure, error or skipped child (with its message)."""
    found = [child for child in case if child.tag in OUTCOMES]
    where = "testcase %s %s" % (case.get("classname"), case.get("name"))
    require(len(found) <= 1, "%s: %d outcome children" % (where, len(found)))
    if not found:
        return "passed", ""
    message = found[0].get("message")
    require(message, "%s: <%s> without a message" % (where, found[0].tag))
    return found[0].tag, message


def check_counts(element, cases):
    """tests, failures, errors and skipped as attributes equal the cases below; time a number."""
    outcomes = [outcome_of(case)[0] for case in cases]
    expected = {"tests": len(cases), "failures": outcomes.count("failure"), "errors": outcomes.count("error"),
                "skipped": outcomes.count("skipped")}
    for attribute, count in expected.items():
        require(element.get(attribute) == str(count),
                "<%s name=%r> %s=%r, but %d below it" % (element.tag, element.get("name"), attribute,
                                                          element.get(attribute), count))
    require(re.fullmatch(r"\d+(\.\d+)?", element.get("time", "")), "%s time %r" % (element.tag, element.get("time")))


def check(path):
    """Parses `path` and checks its structure; returns (outcome, classname, name, message) per case."""
    root = ElementTree.parse(path).getroot()
    require(root.tag == "testsuites", "root <%s>, not <testsuites>" % root.tag)
    suites = list(root)
    require(suites and all(suite.tag == "testsuite" for suite in suites), "not a list of <testsuite>")
    result = []
    for suite in suites:
        require(suite.get("name"), "a testsuite without a name")
        cases = list(suite)
        require(cases and all(case.tag == "testcase" for case in cases), "suite %s: not only <testcase>" % suite.get("name"))
        check_counts(suite, cases)
        for case in cases:
            require(case.get("name") and case.get("classname"), "a testcase without name or classname")
            require(re.fullmatch(r"\d+(\.\d+)?", case.get("time", "")), "testcase time %r" % case.get("time"))
            outcome, message = outcome_of(case)
            result.append((outcome, case.get("classname"), case.get("name"), message))
    check_counts(root, [case for suite in suites for case in suite])
    return result


def verify_end_to_end(phasebench, workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    report = os.path.join(workdir, "verify.xml")
    environment = dict(os.environ, PHASEBENCH_INJECT_DRIFT="kokkos/cpu/0_baseline",
                       PHASEBENCH_INJECT_CRASH="kokkos/cpu/1_mask_collection",
                       ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") + ":handle_segv=0").lstrip(":"))
    command = [phasebench, "verify", "--filter",
               "energy_flow/aggregate/(cuda|kokkos)/(baseline|mask_collection|segment_softmax|legacy_xy_grouping)",
               "--size", "small", "--seeds", "1", "--junit", report]
    ran = subprocess.run(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    require(ran.returncode == 1, "verify exited %d, not 1 (a failing check):\n%s" % (ran.returncode, ran.stdout))
    cases = {(classname, name): (outcome, message) for outcome, classname, name, message in check(report)}
    print("verify: %d cases" % len(cases))

    def case(row):
        key = ("energy_flow/aggregate", "small/" + row + " seed 1")
        require(key in cases, "no case %s %s in %s" % (key + (sorted(cases),)))
        return cases[key]

    outcome, message = case("kokkos/cpu/0_baseline")
    require(outcome == "failure", "the drifting row: %s" % outcome)
    require(re.search(r"rel_l2_err [0-9.e+-]+ \(tolerance [0-9.e+-]+, output \w+", message), message)
    outcome, message = case("kokkos/cpu/1_mask_collection")
    require(outcome == "error" and "crashed" in message, "the crashing row: %s %s" % (outcome, message))
    require(case("kokkos/cpu/2_segment_softmax")[0] == "passed", "the correct row does not pass")
    require(case("kokkos/cpu/4_legacy_xy_grouping")[0] == "passed", "the caught known bug does not pass")
    cuda = [value for (classname, name), value in cases.items() if "/cuda/" in name]
    if shutil.which("nvidia-smi") is None:  # no GPU: every CUDA row is skipped, with why
        require(cuda and all(outcome == "skipped" and "SKIPPED" in message for outcome, message in cuda),
                "CUDA rows without a GPU: %s" % cuda)

    unwritable = subprocess.run(command[:-1] + [os.path.join(workdir, "no-such-folder", "verify.xml")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    require(unwritable.returncode == 2 and "--junit" in unwritable.stdout,
            "an unwritable --junit: exit %d\n%s" % (unwritable.returncode, unwritable.stdout))
    shutil.rmtree(workdir)


def main(arguments):
    try:
        if len(arguments) == 2 and arguments[0] == "--check":
            sys.stdout.reconfigure(encoding="utf-8")
            for case in check(arguments[1]):
                print("\t".join(field.replace("\t", "\\t").replace("\n", "\\n") for field in case))
        elif len(arguments) == 2:
            verify_end_to_end(*arguments)
            print("junit_report_test: passed")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (Bad, ElementTree.ParseError) as error:
        print("junit_report_test: %s" % error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
