// results.csv and samples.csv: one field table per row type drives the header, the writer and the
// reader, so the three cannot drift apart. Reading goes through fast-cpp-csv-parser (fccp).

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <cstdio>
#include <functional>
#include <sstream>
#include <utility>

#include <csv.h>

#include "common/number_text.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/results.hpp"
#include "results/csv_cell.hpp"

namespace pb {
namespace {

// ---- cells ---------------------------------------------------------------------------------------

struct CellError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The writer leaves a missing value empty, never "nan": a "nan" in a file was put there by hand
// or by another tool, and would pass every comparison it meets.
double parse_double(const std::string& cell) {
  if (cell.empty()) return kMissing;
  char* end = nullptr;
  const double value = std::strtod(cell.c_str(), &end);
  if (end == cell.c_str() || *end != '\0') throw CellError("'" + cell + "' is not a number");
  if (std::isnan(value)) throw CellError("'" + cell + "' is not a number (a missing value is an empty cell)");
  return value;
}

// Strict: out of the column's range (an int, or a 64-bit seed) is an error, never a wrapped or
// saturated value.
template <typename Integer>
Integer parse_integer(const std::string& cell) {
  if (cell.empty()) return 0;
  Integer value = 0;
  const char* end = cell.data() + cell.size();
  const auto [stop, error] = std::from_chars(cell.data(), end, value);
  if (error == std::errc::result_out_of_range)
    throw CellError("'" + cell + "' is out of range (" + std::to_string(std::numeric_limits<Integer>::min()) +
                    " to " + std::to_string(std::numeric_limits<Integer>::max()) + ")");
  if (error != std::errc() || stop != end) throw CellError("'" + cell + "' is not an integer");
  return value;
}

Status parse_status_cell(const std::string& cell) {
  if (const auto status = parse_status(cell)) return *status;
  throw CellError("unknown status '" + cell + "' (one of " + status_words() + ")");
}

bool parse_bool(const std::string& cell) {
  if (cell == "true" || cell == "1") return true;
  if (cell == "false" || cell == "0" || cell.empty()) return false;
  throw CellError("'" + cell + "' is not true or false");
}

// ---- field tables --------------------------------------------------------------------------------

template <typename Row>
struct Field {
  const char* name;
  bool required;  // a contract column: a file without it is rejected
  std::function<std::string(const Row&)> write;
  std::function<void(Row&, const std::string&)> read;
};

template <typename Row, typename Member>
Field<Row> field(const char* name, Member Row::*member, bool required = true) {
  Field<Row> f{name, required, nullptr, nullptr};
  if constexpr (std::is_same_v<Member, std::string>) {
    f.write = [member](const Row& row) { return quote_csv_cell(row.*member); };
    f.read = [member](Row& row, const std::string& cell) { row.*member = cell; };
  } else if constexpr (std::is_same_v<Member, double>) {
    f.write = [member](const Row& row) { return format_csv_number(row.*member); };
    f.read = [member](Row& row, const std::string& cell) { row.*member = parse_double(cell); };
  } else if constexpr (std::is_same_v<Member, Status>) {
    f.write = [member](const Row& row) { return std::string(to_string(row.*member)); };
    f.read = [member](Row& row, const std::string& cell) { row.*member = parse_status_cell(cell); };
  } else if constexpr (std::is_same_v<Member, bool>) {
    f.write = [member](const Row& row) { return std::string(row.*member ? "true" : "false"); };
    f.read = [member](Row& row, const std::string& cell) { row.*member = parse_bool(cell); };
  } else {
    f.write = [member](const Row& row) { return std::to_string(row.*member); };
    f.read = [member](Row& row, const std::string& cell) { row.*member = parse_integer<Member>(cell); };
  }
  return f;
}

// A column that holds a time or a count: refused when negative, or not finite. A missing value
// (an empty cell: not timed) stays allowed. Errors and rates may be infinite (an output that
// overflowed; a ratio over a zero time) but are never negative.
template <typename Row>
Field<Row> non_negative(Field<Row> f, const char* what, bool finite = true) {
  f.read = [read = f.read, what, finite](Row& row, const std::string& cell) {
    if (!cell.empty()) {
      const double value = parse_double(cell);
      if (value < 0 || (finite && !std::isfinite(value)))
        throw CellError("'" + cell + "' is not " + what + (finite ? " (finite, not negative)" : " (not negative)"));
    }
    read(row, cell);
  };
  return f;
}
template <typename Row, typename Member>
Field<Row> time_field(const char* name, Member Row::*member, bool required = true) {
  return non_negative(field(name, member, required), "a time");
}
template <typename Row, typename Member>
Field<Row> count_field(const char* name, Member Row::*member, bool required = true) {
  return non_negative(field(name, member, required), "a count");
}
// A measured estimate that may fall on either side of 0 (interference.hpp's others_cores).
template <typename Row, typename Member>
Field<Row> finite_field(const char* name, Member Row::*member, bool required = true) {
  Field<Row> f = field(name, member, required);
  f.read = [read = f.read](Row& row, const std::string& cell) {
    if (!cell.empty() && !std::isfinite(parse_double(cell))) throw CellError("'" + cell + "' is not a finite number");
    read(row, cell);
  };
  return f;
}
template <typename Row, typename Member>
Field<Row> error_field(const char* name, Member Row::*member, bool required = true) {
  return non_negative(field(name, member, required), "an error or tolerance", false);
}
template <typename Row, typename Member>
Field<Row> rate_field(const char* name, Member Row::*member) {
  return non_negative(field(name, member), "a rate or ratio", false);
}

// A column naming what a row measured: refused when empty or not one of the words `accepts`
// allows, so a typo cannot make a row that matches no other run's row and silently drops out.
template <typename Row>
Field<Row> name_field(const char* name, std::string Row::*member, bool (*accepts)(const std::string&),
                      const char* expected, bool required = true) {
  Field<Row> f = field(name, member, required);
  f.read = [member, accepts, expected](Row& row, const std::string& cell) {
    if (!accepts(cell)) throw CellError("'" + cell + "' is not " + expected);
    row.*member = cell;
  };
  return f;
}
template <typename Row>
Field<Row> size_field(std::string Row::*member) {
  return name_field<Row>("size", member, &is_size_name, "a size (small, default, large or a scale such as 0.25x)");
}
template <typename Row>
Field<Row> backend_field(std::string Row::*member) {
  return name_field<Row>("backend", member, &is_backend_name, known_backends_text());
}
template <typename Row>
Field<Row> device_field(std::string Row::*member) {
  return name_field<Row>("device", member, &is_device_name,
                         "a device name (lower-case letters, digits and '_', e.g. cpu or cuda)");
}
template <typename Row>
Field<Row> nonempty_field(const char* name, std::string Row::*member, bool required = true) {
  return name_field<Row>(name, member, [](const std::string& cell) { return !cell.empty(); },
                         "allowed: the column names what the row measured and cannot be empty", required);
}

using R = ResultRow;
const auto& result_fields() {
  // clang-format off: the columns in the contract's order, grouped by hand
  static const std::array fields{
      field("run_id", &R::run_id),
      nonempty_field("suite", &R::suite),
      nonempty_field("workload", &R::workload),
      size_field(&R::size),
      backend_field(&R::backend),
      device_field(&R::device),
      count_field("phase_index", &R::phase_index),
      nonempty_field("phase", &R::phase),
      field("exact", &R::exact),
      field("status", &R::status),
      field("reason", &R::reason),
      error_field("rel_l2_err", &R::rel_l2_err),
      error_field("max_abs_err", &R::max_abs_err),
      error_field("tolerance", &R::tolerance),
      count_field("reps", &R::reps),
      time_field("median_ms", &R::median_ms),
      time_field("min_ms", &R::min_ms),
      time_field("max_ms", &R::max_ms),
      time_field("ci_low_ms", &R::ci_low_ms),
      time_field("ci_high_ms", &R::ci_high_ms),
      rate_field("speedup_vs_prev", &R::speedup_vs_prev),
      rate_field("speedup_vs_phase0", &R::speedup_vs_phase0),
      rate_field("speedup_vs_reference", &R::speedup_vs_reference),
      rate_field("claimed_min", &R::claimed_min),
      rate_field("claimed_max", &R::claimed_max),
      count_field("host_syncs_per_iter", &R::host_syncs_per_iter),
      count_field("ops_per_iter", &R::ops_per_iter),
      count_field("bytes_alloc_per_iter", &R::bytes_alloc_per_iter),
      field("gb_per_s", &R::gb_per_s),
      field("gflop_per_s", &R::gflop_per_s),
      field("roofline_pct", &R::roofline_pct),
      field("threads", &R::threads),
      // added columns: optional when reading, so older files still load
      field("shape", &R::shape, false),
      field("seed", &R::seed, false),
      field("worst_output", &R::worst_output, false),
      field("speedup_vs_prev_ci_low", &R::speedup_vs_prev_ci_low, false),
      field("speedup_vs_prev_ci_high", &R::speedup_vs_prev_ci_high, false),
      field("speedup_vs_phase0_ci_low", &R::speedup_vs_phase0_ci_low, false),
      field("speedup_vs_phase0_ci_high", &R::speedup_vs_phase0_ci_high, false),
      field("speedup_vs_reference_ci_low", &R::speedup_vs_reference_ci_low, false),
      field("speedup_vs_reference_ci_high", &R::speedup_vs_reference_ci_high, false),
      count_field("iterations_per_rep", &R::iterations_per_rep, false),
      count_field("schema", &R::schema, false),
      field("step_output", &R::step_output, false),
      field("step_rel_l2_err", &R::step_rel_l2_err, false),
      field("step_budget", &R::step_budget, false),
      field("ops_by_region", &R::ops_by_region, false),
      field("step_memory_bytes", &R::step_memory_bytes, false),
      field("disturbed", &R::disturbed, false),
      field("bound", &R::bound, false),
      error_field("later_rel_l2_err", &R::later_rel_l2_err, false),
      non_negative(field("scale", &R::scale, false), "a scale"),
  };
  // clang-format on
  return fields;
}

using S = SampleRow;
const auto& sample_fields() {
  static const std::array fields{
      nonempty_field("workload", &S::workload),
      size_field(&S::size),
      backend_field(&S::backend),
      device_field(&S::device),
      nonempty_field("phase", &S::phase),
      count_field("rep", &S::rep),
      time_field("ms", &S::ms),
      field("suite", &S::suite, false),
      time_field("cpu_ms", &S::cpu_ms, false),
      finite_field("others_cores", &S::others_cores, false),
      time_field("rep_ms", &S::rep_ms, false),
      count_field("threads", &S::threads, false),
      time_field("cpu_probe_us", &S::cpu_probe_us, false),
  };
  return fields;
}

// ---- writing -------------------------------------------------------------------------------------

template <typename Fields>
std::vector<std::string> column_names(const Fields& fields) {
  std::vector<std::string> names;
  for (const auto& f : fields) names.push_back(f.name);
  return names;
}

template <typename Fields, typename Row>
std::string to_csv(const Fields& fields, const std::vector<Row>& rows) {
  std::ostringstream out;
  for (size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << fields[i].name;
  out << '\n';
  for (const Row& row : rows) {
    for (size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << fields[i].write(row);
    out << '\n';
  }
  return out.str();
}

// ---- reading -------------------------------------------------------------------------------------

template <size_t N>
using Reader = io::CSVReader<N, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>>;

// Reads the file at `path`, or `content` (named `path` in messages) where given.
template <typename Row, size_t N, size_t... I>
std::vector<Row> read_csv(const std::array<Field<Row>, N>& fields, const std::string& path, const std::string* content,
                          std::index_sequence<I...>) {
  std::vector<Row> rows;
  try {
    std::unique_ptr<Reader<N>> reader =
        content ? std::make_unique<Reader<N>>(path, content->data(), content->data() + content->size())
                : std::make_unique<Reader<N>>(path);
    Reader<N>& in = *reader;
    in.read_header(io::ignore_extra_column | io::ignore_missing_column, fields[I].name...);
    for (const auto& f : fields)
      if (f.required && !in.has_column(f.name))
        throw InputError(path + ": missing column '" + std::string(f.name) +
                         "' (is this a phasebench results file?)");
    std::array<std::string, N> cells;
    while (in.read_row(std::get<I>(cells)...)) {
      Row row;
      for (size_t i = 0; i < N; ++i) {
        if (!in.has_column(fields[i].name)) continue;
        try {
          fields[i].read(row, cells[i]);
        } catch (const CellError& error) {
          throw InputError(path + " line " + std::to_string(in.get_file_line()) + ", column " +
                           fields[i].name + ": " + error.what());
        }
      }
      rows.push_back(std::move(row));
    }
  } catch (const io::error::base& error) {
    throw InputError(std::string("cannot read CSV: ") + error.what());
  }
  return rows;
}

}  // namespace

std::string quote_csv_cell(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::vector<std::string> results_columns() { return column_names(result_fields()); }
std::vector<std::string> samples_columns() { return column_names(sample_fields()); }

std::string results_csv(const std::vector<ResultRow>& rows) { return to_csv(result_fields(), rows); }
std::string samples_csv(const std::vector<SampleRow>& rows) { return to_csv(sample_fields(), rows); }

std::vector<ResultRow> read_results_csv(const std::string& path) {
  const auto& fields = result_fields();
  return read_csv(fields, path, nullptr, std::make_index_sequence<std::tuple_size_v<std::decay_t<decltype(fields)>>>{});
}

std::vector<ResultRow> read_results_csv_text(const std::string& name, const std::string& content) {
  const auto& fields = result_fields();
  return read_csv(fields, name, &content,
                  std::make_index_sequence<std::tuple_size_v<std::decay_t<decltype(fields)>>>{});
}

std::vector<SampleRow> read_samples_csv(const std::string& path) {
  const auto& fields = sample_fields();
  return read_csv(fields, path, nullptr, std::make_index_sequence<std::tuple_size_v<std::decay_t<decltype(fields)>>>{});
}

}  // namespace pb
