// JUnit XML (junit.hpp): the layout GitLab's and Jenkins' test reports read, a <testsuites> root
// whose suites and cases carry their counts and times as attributes.

#include "results/junit.hpp"

#include <iomanip>
#include <sstream>

#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"

namespace pb::junit {
namespace fs = std::filesystem;
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// The length of the UTF-8 sequence starting at text[at], 0 when the bytes there are not one (a
// stray continuation byte, a cut sequence, an overlong form or a surrogate).
size_t utf8_length(const std::string& text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  const size_t length = lead < 0x80                   ? 1
                        : lead >= 0xC2 && lead < 0xE0 ? 2
                        : lead >= 0xE0 && lead < 0xF0 ? 3
                        : lead >= 0xF0 && lead < 0xF5 ? 4
                                                      : 0;
  if (length == 0 || at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i)
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  const unsigned char second = length > 1 ? byte(at + 1) : 0;
  if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second >= 0xA0) || (lead == 0xF0 && second < 0x90) ||
      (lead == 0xF4 && second >= 0x90))
    return 0;
  // U+FFFE and U+FFFF are no XML characters either.
  if (lead == 0xEF && second == 0xBF && (byte(at + 2) == 0xBE || byte(at + 2) == 0xBF)) return 0;
  return length;
}

// One ASCII character as XML text; the control characters XML 1.0 forbids become U+FFFD.
std::string escape_ascii(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    case '\'':
      return "&apos;";
    case '\t':
      return "&#9;";
    case '\n':
      return "&#10;";
    case '\r':
      return "&#13;";
    default:
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7F ? kReplacement : std::string(1, c);
  }
}

std::string attribute(const char* name, const std::string& value) {
  return std::string(" ") + name + "=\"" + escape(value) + "\"";
}

// Plain decimals ("0.034146"), as the JUnit schema's xs:decimal has them: no exponent.
std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(6) << (seconds > 0 ? seconds : 0);
  return text.str();
}

int count(const TestSuite& suite, Outcome outcome) {
  int n = 0;
  for (const TestCase& c : suite.cases) n += c.outcome == outcome;
  return n;
}

double total_seconds(const TestSuite& suite) {
  double seconds = 0;
  for (const TestCase& c : suite.cases) seconds += c.seconds;
  return seconds;
}

// The child that says how the case ended: <failure>, <error>, <skipped> or nothing when it passed.
std::string outcome_element(const TestCase& c) {
  if (c.outcome == Outcome::Passed) return "";
  if (c.outcome == Outcome::Skipped) return "      <skipped" + attribute("message", c.message) + "/>\n";
  const char* tag = c.outcome == Outcome::Failed ? "failure" : "error";
  return std::string("      <") + tag + attribute("message", c.message) + attribute("type", c.type) + ">" +
         escape(c.message) + "</" + tag + ">\n";
}

std::string case_xml(const TestCase& c) {
  const std::string children =
      outcome_element(c) + (c.output.empty() ? "" : "      <system-out>" + escape(c.output) + "</system-out>\n");
  const std::string open = "    <testcase" + attribute("classname", c.classname) + attribute("name", c.name) +
                           attribute("time", seconds_text(c.seconds));
  return children.empty() ? open + "/>\n" : open + ">\n" + children + "    </testcase>\n";
}

std::string suite_xml(const TestSuite& suite) {
  std::string xml = "  <testsuite" + attribute("name", suite.name) +
                    attribute("tests", std::to_string(suite.cases.size())) +
                    attribute("failures", std::to_string(count(suite, Outcome::Failed))) +
                    attribute("errors", std::to_string(count(suite, Outcome::Error))) +
                    attribute("skipped", std::to_string(count(suite, Outcome::Skipped))) +
                    attribute("time", seconds_text(total_seconds(suite))) + ">\n";
  for (const TestCase& c : suite.cases) xml += case_xml(c);
  return xml + "  </testsuite>\n";
}

}  // namespace

TestCase test_case(std::string classname, std::string name, double seconds) {
  TestCase c;
  c.classname = std::move(classname);
  c.name = std::move(name);
  c.seconds = seconds;
  return c;
}

void Report::add(const std::string& suite, TestCase test_case) {
  for (TestSuite& existing : suites_)
    if (existing.name == suite) return existing.cases.push_back(std::move(test_case));
  suites_.push_back({suite, {std::move(test_case)}});
}

std::string Report::xml() const {
  TestSuite all;  // the totals of the root's attributes
  for (const TestSuite& suite : suites_) all.cases.insert(all.cases.end(), suite.cases.begin(), suite.cases.end());
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" + attribute("name", name_) +
                    attribute("tests", std::to_string(all.cases.size())) +
                    attribute("failures", std::to_string(count(all, Outcome::Failed))) +
                    attribute("errors", std::to_string(count(all, Outcome::Error))) +
                    attribute("skipped", std::to_string(count(all, Outcome::Skipped))) +
                    attribute("time", seconds_text(total_seconds(all))) + ">\n";
  for (const TestSuite& suite : suites_) xml += suite_xml(suite);
  return xml + "</testsuites>\n";
}

RowParts row_parts(const std::string& row_name) {
  const size_t first = row_name.find('/');
  const size_t second = first == std::string::npos ? std::string::npos : row_name.find('/', first + 1);
  if (second == std::string::npos) return {row_name.substr(0, first), row_name, row_name};
  return {row_name.substr(0, first), row_name.substr(0, second), row_name.substr(second + 1)};
}

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_length(text, at);
    if (length == 1)
      out += escape_ascii(text[at]);
    else
      out += length ? text.substr(at, length) : kReplacement;
    at += length ? length : 1;
  }
  return out;
}

void check_writable(const fs::path& path, const std::string& option) {
  const fs::path folder = path.parent_path();
  if (!folder.empty() && !fs::is_directory(folder))
    throw InputError(option + " " + path.string() + ": the folder " + folder.string() + " does not exist");
  if (fs::is_directory(path)) throw InputError(option + " " + path.string() + " is a directory, not a file to write");
}

void write(const Report& report, const fs::path& path, const std::string& option) {
  try {
    write_file_atomically(path, report.xml());
  } catch (const std::exception& error) {
    throw InputError(option + " " + path.string() + ": cannot write the JUnit report: " + error.what());
  }
}

}  // namespace pb::junit
