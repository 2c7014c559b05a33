"""Runs the PyTorch examples of docs/check-your-code.md exactly as a user would paste them.

usage: run_doc_examples.py DOC PHASEBENCH WORKDIR [--size SIZE]

Each example is assembled as the page says (the common part, the workload's `compute`, the final
lines that call it), given a fresh `phasebench dump` of its workload, run with this Python, and its
outputs judged by `phasebench check`. Exit 0 only when every example's check passes and the page
has one example of every suite; otherwise the first failure's output is printed and the exit is 1.
"""
import argparse
import pathlib
import re
import subprocess
import sys

SUITES = {"trainer2", "geometry", "spinlock", "adaptive", "energy_flow"}


def python_blocks(text):
    """The page's ```python blocks in order, each with the last `### ` heading above it."""
    blocks, heading = [], None
    for match in re.finditer(r"^### ([^\n]*)$|^```python\n(.*?)^```$", text, re.M | re.S):
        if match.group(1) is not None:
            heading = match.group(1)
        else:
            blocks.append((heading, match.group(2)))
    return blocks


def examples(text):
    """(common part, final lines, {workload: its code}) of the page's examples section."""
    section = text.split("## Examples", 1)[1]
    blocks = python_blocks(section)
    common = [code for heading, code in blocks if heading is None and "def load_inputs" in code]
    final = [code for heading, code in blocks if heading is None and '__name__ == "__main__"' in code]
    if len(common) != 1 or len(final) != 1:
        sys.exit("the page's examples section has no single common part and final lines")
    per_workload = {}
    for heading, code in blocks:
        if heading is not None:
            workload = heading.split()[0]
            per_workload[workload] = per_workload.get(workload, "") + code
    return common[0], final[0], per_workload


def run(command, what):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAILED: {what} (exit {result.returncode}): {' '.join(map(str, command))}")
        print(result.stdout + result.stderr)
        sys.exit(1)
    return result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("doc")
    parser.add_argument("phasebench")
    parser.add_argument("workdir", type=pathlib.Path)
    parser.add_argument("--size", default="small")
    args = parser.parse_args()

    common, final, per_workload = examples(pathlib.Path(args.doc).read_text())
    covered = {workload.split("/")[0] for workload in per_workload}
    if covered != SUITES:
        sys.exit(f"the page's examples cover {sorted(covered)}, not one workload of each suite {sorted(SUITES)}")
    for workload, code in per_workload.items():
        where = args.workdir / workload.replace("/", "_")
        where.mkdir(parents=True, exist_ok=True)
        script = where / "my_check.py"
        script.write_text(common + "\n\n" + code + "\n\n" + final)
        dump, outputs = where / "dump", where / "outputs"
        run([args.phasebench, "dump", "--workload", workload, "--size", args.size, "--out", dump], f"dump of {workload}")
        run([sys.executable, script, dump, outputs], f"the example of {workload}")
        verdict = run([args.phasebench, "check", dump, outputs], f"phasebench check of the example of {workload}")
        print(verdict.strip().splitlines()[-1])
    print(f"{len(per_workload)} examples of docs/check-your-code.md pass `phasebench check` at size {args.size}")


if __name__ == "__main__":
    main()
