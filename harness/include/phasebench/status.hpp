#pragma once
// A row's status: what the check and the timing made of one case. results.csv writes it as its
// word (OK, FAIL, ...: a contract, docs/file-formats.md); everything inside phasebench holds the
// enum, parsed once when a file is read, so a misspelt status is an input error, never a row that
// silently matches nothing.

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace pb {

enum class Status {
  Ok,           // checked and timed
  Fail,         // outside tolerance, NaN/Inf, a missing output
  Mistrusted,   // the reference is mostly exact zeros: the inputs prove nothing
  Error,        // threw or crashed
  Skipped,      // cannot run here (no device, a phase for another device)
  Unsupported,  // the variant does not implement this size, device or phase
  Caught,       // a variant declared to reproduce a known bug, and the check caught it
};

/// The word results.csv uses: "OK", "FAIL", ...
const char* to_string(Status status);
/// The status a word names; nullopt for anything else (case matters: the files are written upper case).
std::optional<Status> parse_status(std::string_view word);
/// "OK, FAIL, ...": every word, for messages.
std::string status_words();

/// FAIL, MISTRUSTED, ERROR: a check failed (exit code 1, a broken row in `compare`). CAUGHT is a
/// check doing its job.
bool is_failure(Status status);

inline std::ostream& operator<<(std::ostream& out, Status status) { return out << to_string(status); }

}  // namespace pb
