#pragma once
// Per-row thresholds for `compare` (--thresholds FILE): a team loosens the rows it knows are
// noisy and tightens the ones it cares about, without one threshold for every row.
//
// The file has one rule per line, a row pattern and a threshold in percent:
//
//   # pattern                          percent
//   geometry/christoffel/*/torch/*       3
//   */reference/*                       20
//
// A pattern is a shell glob (`*`, `?`, `[...]`; `*` also matches `/`) over the row's name as
// compare prints it (suite/workload/size/backend/device/index_phase). The first rule that matches
// a row gives its threshold; rows no rule matches keep --threshold. Blank lines and text after `#`
// are ignored. Internal to the harness.

#include <optional>
#include <string>
#include <vector>

namespace pb::compare {

struct ThresholdRule {
  std::string pattern;
  double threshold_pct = 0;
  int line = 0;  // where the file gives it, for messages
};

struct RowThresholds {
  std::string file;  // empty: no file given
  std::vector<ThresholdRule> rules;

  /// The threshold of the first rule whose pattern matches `row_name`, if any.
  const ThresholdRule* rule_for(const std::string& row_name) const;
};

/// Reads a thresholds file; a bad line is refused (InputError: file, line and what is wrong).
RowThresholds read_row_thresholds(const std::string& path);

}  // namespace pb::compare
