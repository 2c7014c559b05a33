#include "engine/run_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "results/results_model.hpp"

namespace pb::detail {
namespace fs = std::filesystem;
namespace {

constexpr const char* kRows = "rows.csv";
constexpr const char* kSamples = "samples.csv";
constexpr const char* kBenchmarks = "benchmarks.jsonl";
constexpr const char* kPlan = "plan.json";
constexpr const char* kErrors = "errors.tsv";
constexpr const char* kLaterChecks = "later_checks.tsv";
constexpr const char* kCeilings = "ceilings.json";
constexpr const char* kArguments = "arguments.json";
constexpr const char* kOtherWork = "other_work.jsonl";

// One write(2) with O_APPEND: a line is on disk whole or, if the worker dies inside the call, cut
// short at the end of the file, where the reader drops it.
void append(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot append to " + path.string());
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  if (written != text.size()) throw std::runtime_error("short write to " + path.string());
}

// A CSV text's first line (the header) and the rest.
std::pair<std::string, std::string> split_header(const std::string& csv) {
  const auto newline = csv.find('\n');
  return {csv.substr(0, newline + 1), csv.substr(newline + 1)};
}

void append_csv(const fs::path& path, const std::string& csv) {
  const auto [header, body] = split_header(csv);
  append(path, fs::exists(path) ? body : header + body);
}

// Drops a last line without its newline (the write a killed worker did not finish).
bool drop_cut_line(const fs::path& path) {
  if (!fs::exists(path)) return false;
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) return false;
  if (text.back() != '\n') fs::resize_file(path, text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  return fs::file_size(path) > 0;
}

// A reason as one field of a .tsv line.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\t') c = ' ';
  return text;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
  return fields;
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::vector<std::string> lines;
  if (!drop_cut_line(path)) return lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::optional<nlohmann::json> read_json(const fs::path& path) {
  if (!fs::exists(path)) return std::nullopt;
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

const std::vector<SampleRow>& RunRecord::samples_of(const ResultRow& row) const {
  static const std::vector<SampleRow> none;
  const auto found = samples.find(results::row_key(row));
  return found == samples.end() ? none : found->second;
}

RunRecord read_run_record(const fs::path& directory) {
  RunRecord record;
  if (!fs::is_directory(directory)) return record;
  if (drop_cut_line(directory / kRows) && fs::file_size(directory / kRows) > 0)
    for (ResultRow& row : read_results_csv((directory / kRows).string()))
      record.checked[results::row_key(row)] = std::move(row);
  const std::vector<std::string> entries = lines_of(directory / kBenchmarks);
  if (drop_cut_line(directory / kSamples)) {
    std::vector<SampleRow> samples = read_samples_csv((directory / kSamples).string());
    // Each repetition writes its sample, then its benchmark entry: a worker killed between the two
    // leaves one sample more than entries, and that repetition is done again.
    if (samples.size() > entries.size()) samples.resize(entries.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      const std::string key = results::row_key(samples[i]);
      record.samples[key].push_back(samples[i]);
      record.benchmark_entries[key].push_back(nlohmann::json::parse(entries[i]));
    }
  }
  if (const auto plan = read_json(directory / kPlan); plan && plan->is_object())
    for (const auto& [key, timing] : plan->items())
      record.plan[key] = {timing.at("reps").get<int>(), timing.at("iterations_per_rep").get<int64_t>(),
                          timing.at("iteration_ms").get<double>()};
  for (const std::string& line : lines_of(directory / kErrors)) {
    const auto tab = line.find('\t');
    if (tab != std::string::npos) record.errors[line.substr(0, tab)] = line.substr(tab + 1);
  }
  for (const std::string& line : lines_of(directory / kLaterChecks)) {
    const std::vector<std::string> fields = split_tabs(line);
    const std::optional<Status> status = fields.size() >= 3 ? parse_status(fields[1]) : std::nullopt;
    if (!status) continue;
    record.later_checks[fields[0]] = {*status, std::strtod(fields[2].c_str(), nullptr),
                                      fields.size() > 3 ? fields[3] : std::string()};
  }
  record.ceilings = read_json(directory / kCeilings);
  if (auto arguments = read_json(directory / kArguments)) record.arguments = std::move(*arguments);
  for (const std::string& line : lines_of(directory / kOtherWork)) {
    const nlohmann::json stage = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (stage.is_object() && stage.contains("stage")) record.other_work.push_back(stage);
  }
  return record;
}

RunRecorder::RunRecorder(fs::path directory) : directory_(std::move(directory)) {
  fs::create_directories(directory_);
}

void RunRecorder::checked(const ResultRow& row) { append_csv(directory_ / kRows, results_csv({row})); }

void RunRecorder::repetition(const SampleRow& sample, const nlohmann::json& benchmark_entry) {
  append_csv(directory_ / kSamples, samples_csv({sample}));
  append(directory_ / kBenchmarks, benchmark_entry.dump() + "\n");
}

void RunRecorder::plan(const std::map<std::string, CaseTiming>& plan) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [key, timing] : plan)
    json[key] = {{"reps", timing.reps}, {"iterations_per_rep", timing.iterations_per_rep},
                 {"iteration_ms", timing.iteration_ms}};
  write_file_atomically(directory_ / kPlan, json.dump(1) + "\n");
}

void RunRecorder::error(const std::string& row_name, const std::string& reason) {
  append(directory_ / kErrors, row_name + "\t" + one_line(reason) + "\n");
}

void RunRecorder::later_check(const std::string& row_name, const LaterCheck& check) {
  std::ostringstream error;
  error.precision(17);
  error << check.rel_l2_err;
  append(directory_ / kLaterChecks,
         row_name + "\t" + to_string(check.status) + "\t" + error.str() + "\t" + one_line(check.reason) + "\n");
}

void RunRecorder::ceilings(const nlohmann::json& ceilings) {
  write_file_atomically(directory_ / kCeilings, ceilings.dump(1) + "\n");
}

void RunRecorder::other_work(const std::string& stage, double seconds, double cores, double steal_cores) {
  const auto number = [](double value) { return std::isnan(value) ? nlohmann::json() : nlohmann::json(value); };
  append(directory_ / kOtherWork, nlohmann::json{{"stage", stage},
                                                 {"seconds", seconds},
                                                 {"others_cores", number(cores)},
                                                 {"steal_cores", number(steal_cores)}}
                                          .dump() +
                                      "\n");
}

void RunRecorder::arguments(const nlohmann::json& arguments) {
  write_file_atomically(directory_ / kArguments, arguments.dump(1) + "\n");
}

}  // namespace pb::detail
