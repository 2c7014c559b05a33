#!/usr/bin/env bash
# Rules a grep can hold the repository to: variants ask the phase plan, never a phase
# number; a torch variant file, compiled in a unity batch, keeps its names in its own namespace;
# the repository refers to nothing outside itself.
set -uo pipefail
root=${1:?usage: repository_rules.sh REPOSITORY_ROOT}
cd "$root" || exit 2
failed=0
report() {  # report DESCRIPTION: the grep output on stdin, if any, is a violation
  local found
  found=$(cat)
  if [ -n "$found" ]; then
    echo "FAIL: $1"
    echo "$found"
    failed=1
  fi
}
# The paths outside the repository that earlier files named, spelt in pieces so that this file
# does not match its own pattern.
outside_paths='\.\./'"shared"'\|'"WORKLOADS"'\.md\|'"DESIGN"'\.md'
# Each check feeds `report` through a redirection, not a pipe: a pipe would run it in a subshell
# and lose `failed`.
report "optimized/ compares phase numbers (ask context.has(...) instead)" < <(grep -rnE 'phase ?[<>]=?' optimized/)
report "optimized/ tests a phase number for equality" \
  < <(grep -rnE '(context_?|ctx)\.phase ?[!=]=|\.phase ?[!=]= ?[0-9k]' optimized/)
# backends/torch/CMakeLists.txt names the torch files compiled on their own.
report "torch variant files in unity batches without namespace PHASEBENCH_FILE_ID (their names would collide)" \
  < <(ls optimized/*/*-torch.cpp | grep -v '/trainer2_engine-torch\.cpp$' | xargs grep -L '^namespace PHASEBENCH_FILE_ID {')
report "files that point outside the repository" \
  < <(git ls-files -co --exclude-standard | xargs grep -ln "$outside_paths" 2>/dev/null)
if [ "$failed" -eq 0 ]; then echo "repository rules: all hold"; fi
exit "$failed"
