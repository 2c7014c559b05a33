#!/usr/bin/env bash
# The format stage of CI: runs `git clang-format` (the style of .clang-format) on the C++ lines that
# the commits since ${PHASEBENCH_FORMAT_BASE:-HEAD~1} changed, prints the diff clang-format wants
# and fails when there is one. Lines nobody touched are not checked, so old code is reformatted only
# where a change passes through it. A shallow clone or a repository of one commit has no base to
# compare with: the stage then checks nothing and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${PHASEBENCH_FORMAT_BASE:-HEAD~1}

if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "format-check: no commit $base here (a shallow clone or a single commit): nothing checked"
  exit 0
fi
# clang-format is one of ci/install-deps.sh's packages; this stage runs before ci/test.sh installs them.
if ! command -v git-clang-format >/dev/null || ! command -v clang-format >/dev/null; then
  bash ci/install-deps.sh
fi

# git-clang-format 14 exits 0 whether or not it has a diff to print (later versions exit 1), so
# the stage reads its output: a diff, or nothing (or a note) when the lines are formatted.
output=$(git clang-format --binary clang-format --diff "$base" HEAD -- '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h')
if grep -q '^diff --git' <<<"$output"; then
  printf '%s\n' "$output"
  echo "format-check: lines changed since $base are not formatted as .clang-format says;" \
    "\`git clang-format $base\` applies the diff above" >&2
  exit 1
fi
[ -z "$output" ] || echo "format-check: $output"
echo "format-check: the lines changed since $base are formatted"
