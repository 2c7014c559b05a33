#pragma once
// JUnit XML, the test report GitLab, Jenkins and most CI systems read: `verify` and `compare` write
// one with --junit, so a CI system lists each check or compared row beside its other tests.
// Internal to the harness.

#include <filesystem>
#include <string>
#include <vector>

namespace pb::junit {

enum class Outcome { Passed, Failed, Error, Skipped };

/// One <testcase>. A failed, error or skipped case carries `message` (with `type` for a failure or
/// an error); `output`, when set, becomes its <system-out>.
struct TestCase {
  std::string classname, name;
  double seconds = 0;
  Outcome outcome = Outcome::Passed;
  std::string type, message, output;
};
/// A passed case; its outcome, type, message and output are set after.
TestCase test_case(std::string classname, std::string name, double seconds = 0);

struct TestSuite {
  std::string name;
  std::vector<TestCase> cases;
};

/// The <testsuites> of one command, its suites in the order their first case came.
class Report {
 public:
  explicit Report(std::string name) : name_(std::move(name)) {}
  /// Adds `test_case` to the suite named `suite`, starting that suite when it is new.
  void add(const std::string& suite, TestCase test_case);
  std::string xml() const;

 private:
  std::string name_;
  std::vector<TestSuite> suites_;
};

/// A row named "suite/workload/rest" (a results row or a check of `verify`) as JUnit groups it:
/// suite "suite", class "suite/workload", name "rest" (GitLab lists a case by class and name).
struct RowParts {
  std::string suite, classname, name;
};
RowParts row_parts(const std::string& row_name);

/// `text` for XML 1.0 element content and attribute values: the five special characters as
/// entities, line breaks and tabs as character references (kept in attributes), characters XML 1.0
/// forbids and bytes that are not UTF-8 as U+FFFD.
std::string escape(const std::string& text);

/// Throws InputError naming `option` when `path` cannot be written to: its folder is missing or it
/// is a directory. Checked before a command works, so that a long `verify` does not end in it.
void check_writable(const std::filesystem::path& path, const std::string& option);
/// Writes `report` to `path` atomically (temporary name, then a rename); InputError naming
/// `option` when it cannot.
void write(const Report& report, const std::filesystem::path& path, const std::string& option);

}  // namespace pb::junit
