#include "report/report_sections.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "engine/interference.hpp"
#include "phasebench/backend.hpp"
#include "report/report_charts.hpp"
#include "report/report_html.hpp"
#include "report/report_svg.hpp"

namespace pb::report {

std::string section(const std::string& id, const std::string& title, const std::string& body) {
  return "<section id=\"" + escape(id) + "\"><h2>" + title + "</h2>\n" + body + "</section>\n";
}

std::string figure(const std::string& caption, const std::string& svg) {
  return "<figure><figcaption>" + escape(caption) + "</figcaption>" + svg + "</figure>";
}

std::string charts_row(const std::vector<std::string>& figures) {
  std::string html = "<div class=\"charts\">";
  for (const std::string& f : figures) html += f;
  return html + "</div>\n";
}

std::string paragraph(const std::string& text, const std::string& css_class) {
  return "<p class=\"" + css_class + "\">" + text + "</p>\n";
}

namespace {

std::string with_interval(double value, double low, double high, std::string (*format)(double)) {
  const std::string interval = format_interval(low, high, format);
  return format(value) + (interval.empty() ? "" : " " + interval);
}

std::string verdict_markup(const ClaimCheck& claim) {
  using V = ClaimCheck::Verdict;
  const char* css = claim.verdict == V::Below ? "verdict-below" : claim.verdict == V::Above ? "verdict-above" : "verdict-within";
  return "<span class=\"" + std::string(css) + "\">" + escape(claim.text()) + "</span>";
}

// ---- runs ----------------------------------------------------------------------------------------

// machine.json is free-form: any key may be missing or of another type than a run writes, and
// the report still shows what is there (a string as it is, anything else as JSON).
std::string value_text(const nlohmann::json& object, const char* key, const std::string& otherwise) {
  if (!object.is_object() || !object.contains(key)) return otherwise;
  const nlohmann::json& value = object[key];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string machine_text(const nlohmann::json& machine, const char* object, const char* key) {
  if (!machine.is_object() || !machine.contains(object)) return "-";
  return value_text(machine[object], key, "-");
}

std::string top_text(const nlohmann::json& machine, const char* key) { return value_text(machine, key, "-"); }

std::string claim_summary(const Run& run) {
  if (!run.data.catalog.saved) return "unknown: no catalog.json (measured before catalogs were saved)";
  std::map<std::string, int> counts;
  for (const WorkloadKey& key : workloads({run})) {
    const Rows rows = rows_of(run, key);
    for (const ResultRow* row : rows)
      if (is_timed(*row)) {
        const ClaimCheck claim = check_claim(*row, rows, run.data.catalog);
        if (!std::isnan(claim.claimed_min)) ++counts[claim.text()];
      }
  }
  std::string text;
  for (const auto& [verdict, count] : counts) text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + verdict;
  return text.empty() ? "-" : text;
}

std::string incomplete_notes(const std::vector<Run>& runs) {
  std::string html;
  for (const Run& run : runs)
    if (const auto why = run.data.incomplete())
      html += paragraph(escape("Run " + run.letter + " is incomplete: " + *why +
                               ". Its rows are the cases it finished before it stopped."));
  return html;
}

}  // namespace

int chart_width(size_t) { return 570; }  // two to a line of the page

std::string runs_section(const std::vector<Run>& runs) {
  Table table({"run", "run id", "path", "CPU", "fingerprint", "commit", "threads", "rows", "OK", "failed",
               "skipped or unsupported", "claims (measured gain vs claim)"});
  std::set<std::string> fingerprints;
  for (const Run& run : runs) {
    int ok = 0, failed = 0, not_run = 0;
    for (const ResultRow& row : run.data.rows) {
      if (row.status == Status::Ok) ++ok;
      else if (is_failure(row.status)) ++failed;
      else ++not_run;
    }
    fingerprints.insert(run.data.fingerprint());
    table.cell(run.letter).cell(run.run_id).cell(run.data.label).cell(machine_text(run.data.machine, "cpu", "model"))
        .cell(run.data.fingerprint()).cell(top_text(run.data.machine, "git_commit"))
        .cell(top_text(run.data.machine, "threads"), "num").cell(std::to_string(run.data.rows.size()), "num")
        .cell(std::to_string(ok), "num").cell(std::to_string(failed), "num").cell(std::to_string(not_run), "num")
        .cell(claim_summary(run));
    table.end_row();
  }
  std::string note;
  if (runs.size() > 1)
    note = fingerprints.size() == 1
               ? "All runs come from one machine (same fingerprint): differences are the code's or the noise's."
               : "The runs come from " + std::to_string(fingerprints.size()) +
                     " machines (fingerprints differ): absolute times compare the hardware too.";
  return section("runs", "Runs", table.html() + incomplete_notes(runs) + (note.empty() ? "" : paragraph(escape(note))));
}

// ---- one workload --------------------------------------------------------------------------------

namespace {

std::string phase_names(const std::vector<Rows>& rows_per_run) {
  std::map<int, std::string> names;
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows)
      if (row->backend != kReferenceBackend) names.emplace(row->phase_index, row->phase);
  std::string text;
  for (const auto& [index, name] : names) text += (text.empty() ? "" : " \xC2\xB7 ") + std::to_string(index) + " " + name;
  return text;
}

// (ladder, phase index, phase name) of every row, in order, over all runs.
using CaseKey = std::tuple<std::string, int, std::string>;
std::vector<CaseKey> case_keys(const std::vector<Rows>& rows_per_run, bool timed_non_reference_only) {
  std::set<CaseKey> keys;
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows)
      if (!timed_non_reference_only || (is_timed(*row) && row->backend != kReferenceBackend && row->phase_index > 0))
        keys.emplace(ladder_name(*row), row->phase_index, row->phase);
  return {keys.begin(), keys.end()};
}

const ResultRow* find_case(const Rows& rows, const CaseKey& key) {
  for (const ResultRow* row : rows)
    if (ladder_name(*row) == std::get<0>(key) && row->phase_index == std::get<1>(key) && row->phase == std::get<2>(key))
      return row;
  return nullptr;
}

// The ladder and phase cells of a case, the phase badged when any run ran it as approximate.
void case_cells(Table& table, const CaseKey& key, const std::vector<Rows>& rows_per_run) {
  bool exact = true;
  for (const Rows& rows : rows_per_run)
    if (const ResultRow* row = find_case(rows, key)) exact = exact && row->exact;
  table.cell(std::get<0>(key)).markup(marked_if_approximate(std::to_string(std::get<1>(key)) + " " + std::get<2>(key), exact));
}

std::string claims_table(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run) {
  std::vector<std::string> header{"backend/device", "phase", "claimed gain"};
  for (const Run& run : runs) {
    header.push_back(run.letter + ": measured gain [95% CI]");
    header.push_back(run.letter + ": verdict");
  }
  Table table(header);
  for (const CaseKey& key : case_keys(rows_per_run, true)) {
    std::string claimed = "-";
    for (size_t r = 0; r < runs.size(); ++r)
      if (const ResultRow* row = find_case(rows_per_run[r], key); row && claimed == "-")
        claimed = check_claim(*row, rows_per_run[r], runs[r].data.catalog).claim_text();
    case_cells(table, key, rows_per_run);
    table.cell(claimed, "num");
    for (size_t r = 0; r < runs.size(); ++r) {
      const ResultRow* row = find_case(rows_per_run[r], key);
      if (!row || !is_timed(*row)) {
        table.cell(row ? to_string(row->status) : "-").cell("");
        continue;
      }
      table.cell(with_interval(row->speedup_vs_prev, row->speedup_vs_prev_ci_low, row->speedup_vs_prev_ci_high, format_ratio), "num")
          .markup(verdict_markup(check_claim(*row, rows_per_run[r], runs[r].data.catalog)));
    }
    table.end_row();
  }
  return table.html();
}

std::string every_phase_table(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run) {
  std::vector<std::string> header{"backend/device", "phase"};
  for (size_t r = 0; r < runs.size(); ++r) {
    header.push_back(runs[r].letter + ": median [95% CI]");
    header.push_back(runs[r].letter + ": vs reference");
    if (r > 0) header.push_back(runs[r].letter + " vs A (time ratio)");
  }
  Table table(header);
  for (const CaseKey& key : case_keys(rows_per_run, false)) {
    case_cells(table, key, rows_per_run);
    const ResultRow* first = find_case(rows_per_run[0], key);
    for (size_t r = 0; r < runs.size(); ++r) {
      const ResultRow* row = find_case(rows_per_run[r], key);
      if (!row || !is_timed(*row)) {
        table.markup(row ? status_badge(row->status) : "-").cell("");
      } else {
        table.cell(with_interval(row->median_ms, row->ci_low_ms, row->ci_high_ms, format_ms), "num")
            .cell(format_ratio(row->speedup_vs_reference), "num");
      }
      if (r == 0) continue;
      const bool both = first && row && is_timed(*first) && is_timed(*row);
      table.cell(both ? format_ratio(first->median_ms / row->median_ms) : "-", "num");
    }
    table.end_row();
  }
  return table.html() +
         (runs.size() > 1 ? paragraph("A time ratio above 1&times; means that run is faster than run A.") : "");
}

bool any_row(const std::vector<Rows>& rows_per_run, bool (*wanted)(const ResultRow&)) {
  for (const Rows& rows : rows_per_run)
    if (std::any_of(rows.begin(), rows.end(), [&](const ResultRow* row) { return wanted(*row); })) return true;
  return false;
}

bool is_approximate_row(const ResultRow& row) { return !row.exact; }

bool has_region_or_step_counts(const ResultRow& row) {
  return !row.ops_by_region.empty() || !row.step_memory_bytes.empty();
}

std::string percent(double share) { return std::isnan(share) ? "-" : format_number(100 * share) + "%"; }

// Operations per named region with the seed's per-function claims beside them, and the memory
// held after each step (KiB), per run and row.
std::string regions_and_memory_table(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run) {
  Table table({"run", "backend/device", "phase", "ops per region", "claimed vs measured cut",
               "memory held after each step (KiB)"});
  for (size_t r = 0; r < runs.size(); ++r) {
    std::map<std::string, std::vector<const ResultRow*>> ladders;
    for (const ResultRow* row : rows_per_run[r]) ladders[ladder_name(*row)].push_back(row);
    for (const auto& [ladder, rows] : ladders) {
      for (const ResultRow* row : rows) {
        if (!has_region_or_step_counts(*row)) continue;
        const auto check = check_region_claim(*row, rows, runs[r].data.catalog);
        std::string memory;
        for (double bytes : parse_step_values(row->step_memory_bytes))
          memory += (memory.empty() ? "" : " ") + format_number(bytes / 1024);
        table.cell(runs[r].letter).cell(ladder).cell(std::to_string(row->phase_index) + " " + row->phase)
            .cell(row->ops_by_region)
            .cell(check ? check->region + ": " + format_number(check->phase0_ops) + " \xE2\x86\x92 " +
                              format_number(check->ops) + ", " + percent(check->measured_cut) + " fewer (claimed " +
                              percent(check->claimed_cut) + ")"
                        : "")
            .cell(memory, "num");
        table.end_row();
      }
    }
  }
  return "<h3>Operations per region and memory per step</h3>\n" + table.html() +
         paragraph("Operations counted in each function the variant marks as a region (nested regions count for "
                   "the innermost); a claimed cut is the seed's share of phase 0's operations that the phase "
                   "removes. Memory: bytes held after each step of one iteration, from its start.");
}

std::string step_errors_anchor(const WorkloadKey& key) { return key.anchor() + "-steps"; }

std::string approximate_note() {
  return paragraph("<span class=\"approx\">approx</span> " + escape(kApproximateMeaning) +
                   ". Charts draw these phases as rings on dashed lines.");
}

bool any_optimized_timed(const std::vector<Rows>& rows_per_run) {
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows)
      if (row->backend != kReferenceBackend && is_timed(*row)) return true;
  return false;
}

bool any_claim(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run) {
  for (size_t r = 0; r < runs.size(); ++r)
    for (const ResultRow* row : rows_per_run[r])
      if (is_timed(*row) && !std::isnan(check_claim(*row, rows_per_run[r], runs[r].data.catalog).claimed_min))
        return true;
  return false;
}

// Which runs cannot say what this workload claims, and why (a run from before catalogs were saved).
std::string unknown_claims_note(const std::vector<Run>& runs, const WorkloadKey& key) {
  std::string text;
  for (const Run& run : runs)
    if (const std::string why = run.data.catalog.unknown_because(key.suite, key.workload); !why.empty())
      text += "Claims of run " + run.letter + " are unknown: " + why + ". ";
  return text.empty() ? "" : paragraph(escape(text));
}

std::string claims_note() {
  return paragraph("Gain over the previous timed phase of the same backend (speedup_vs_prev with its interval) "
                   "against the seed's claimed range (band; multiplied over skipped phases). A verdict is "
                   "&ldquo;below&rdquo; or &ldquo;above&rdquo; only when the whole interval is outside the claim.");
}

std::string ladder_and_claims(const std::vector<Run>& runs, const WorkloadKey& key, const std::vector<Rows>& rows_per_run,
                              const Colors& colors) {
  const std::vector<int> phases = ladder_phases(rows_per_run);
  const Range speedups = speedup_range(rows_per_run), gains = gain_range(runs, rows_per_run);
  const int width = chart_width(runs.size());
  std::vector<std::string> ladders, claims;
  for (size_t r = 0; r < runs.size(); ++r) {
    ladders.push_back(figure(runs[r].caption(), ladder_chart(rows_per_run[r], phases, colors, speedups, width,
                                                             "phase ladder of run " + runs[r].letter)));
    claims.push_back(figure(runs[r].caption(), claims_chart(runs[r], rows_per_run[r], phases, colors, gains, width,
                                                            "claimed and measured gains of run " + runs[r].letter)));
  }
  const std::string ladder_note = paragraph(
      "Phase ladder: speedup of each phase over the serial fp32 reference, median with its 95% bootstrap "
      "interval; &times; on the floor: the phase did not run (hover for why).");
  const bool claimed = any_claim(runs, rows_per_run);
  const std::string unknown = unknown_claims_note(runs, key);
  if (runs.size() == 1) {  // one run: the ladder and its claims side by side
    if (claimed) ladders.push_back(claims.front());
    return "<h3>Phase ladder" + std::string(claimed ? " and claimed vs measured gains" : "") + "</h3>\n" +
           charts_row(ladders) + ladder_note + unknown + (claimed ? claims_note() + claims_table(runs, rows_per_run) : "");
  }
  std::string html = "<h3>Phase ladder</h3>\n" + charts_row(ladders) + ladder_note;
  html += "<h3>Claimed vs measured gain per phase</h3>\n" + unknown;
  if (!claimed) return html + (unknown.empty() ? paragraph("No phase of this workload carries a claim.") : "");
  return html + charts_row(claims) + claims_note() + claims_table(runs, rows_per_run);
}


std::string samples_details(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run, const Colors& colors) {
  std::string html = "<details><summary>Every repetition</summary>";
  const Range shared = svg::log_range(sample_times(runs, rows_per_run), 1.2, 2);
  for (size_t r = 0; r < runs.size(); ++r)
    html += figure(runs[r].caption(), samples_chart(runs[r], rows_per_run[r], colors, shared, 1150));
  return html + "</details>\n";
}

}  // namespace

std::string workload_section(const std::vector<Run>& runs, const WorkloadKey& key, const Colors& colors) {
  std::vector<Rows> rows_per_run;
  for (const Run& run : runs) rows_per_run.push_back(rows_of(run, key));
  std::string shape;
  for (const Rows& rows : rows_per_run)
    if (shape.empty()) shape = shape_of(rows);
  const std::string title = escape(key.name()) + " <span class=\"sub\">" + escape(key.size) +
                            (shape.empty() ? "" : " \xC2\xB7 " + escape(shape)) + "</span>";
  std::string body;
  if (const std::string names = phase_names(rows_per_run); !names.empty()) body += paragraph("phases: " + escape(names));
  const bool approximate = any_row(rows_per_run, is_approximate_row);
  if (approximate) body += approximate_note();
  if (any_row(rows_per_run, has_step_errors))
    body += paragraph("Error after every rollout step: <a href=\"#" + step_errors_anchor(key) + "\">chart</a>.");
  if (any_optimized_timed(rows_per_run)) {
    body += ladder_and_claims(runs, key, rows_per_run, colors);
    std::vector<Rows> best;
    for (const Rows& rows : rows_per_run) best.push_back(best_phase_rows(rows));
    body += "<h3>Backends at their best phase</h3>\n" + best_phase_chart(runs, best, colors);
    if (approximate)
      body += paragraph("Each backend at its fastest exact phase; its fastest approximate phase is shown on a line "
                        "of its own, and only when it is faster still.");
  } else {
    body += paragraph("No optimized variant of this workload was timed in these runs; only its rows below.");
  }
  if (any_row(rows_per_run, has_region_or_step_counts)) body += regions_and_memory_table(runs, rows_per_run);
  body += "<h3>Every phase" + std::string(runs.size() > 1 ? ", runs side by side" : "") + "</h3>\n" +
          every_phase_table(runs, rows_per_run) + samples_details(runs, rows_per_run, colors);
  return section(key.anchor(), title, body);
}

// ---- error per rollout step ----------------------------------------------------------------------

namespace {

// More lines than this and a chart is a tangle: it then keeps per ladder phase 0, the best exact
// and the best approximate row (the table below it still has every row).
constexpr size_t kMaxStepLines = 12;

std::vector<std::string> step_outputs(const std::vector<Rows>& rows_per_run) {
  std::set<std::string> outputs;
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows)
      if (has_step_errors(*row) && !row->step_output.empty()) outputs.insert(row->step_output);
  return {outputs.begin(), outputs.end()};
}

// What the log axis could not show: zero errors (step 0 starts from the exact initial state) and
// missing or non-finite ones.
std::string undrawn_note(const Rows& drawn) {
  int zero_first = 0, other_gaps = 0;
  for (const ResultRow* row : drawn) {
    const std::vector<double> errors = parse_step_values(row->step_rel_l2_err);
    for (size_t t = 0; t < errors.size(); ++t) {
      if (errors[t] > 0 && std::isfinite(errors[t])) continue;
      (t == 0 && errors[t] == 0 ? zero_first : other_gaps) += 1;
    }
  }
  std::string note;
  if (zero_first > 0)
    note += "Step 0 has zero error in " + std::to_string(zero_first) + " of " + std::to_string(drawn.size()) +
            " lines (the rollout starts from the exact initial state): zero has no place on a log axis, so it is "
            "left out. ";
  if (other_gaps > 0)
    note += std::to_string(other_gaps) + " other step error(s) are zero, missing or not finite: gaps in their lines. ";
  return note;
}

std::string step_chart_figure(const Run& run, const Rows& rows, const Colors& colors, Range y_range) {
  const Rows drawn = step_error_rows(rows, kMaxStepLines);
  if (drawn.empty()) return paragraph(escape(run.caption()) + ": no rollout row of this run has step errors.");
  const auto drawable = std::count_if(rows.begin(), rows.end(), [](const ResultRow* row) { return has_step_errors(*row); });
  std::string notes = undrawn_note(drawn);
  if (static_cast<std::ptrdiff_t>(drawn.size()) < drawable)
    notes += "Showing " + std::to_string(drawn.size()) + " of " + std::to_string(drawable) +
             " rows: per backend phase 0, the best exact and the best approximate phase; the table below has every row.";
  return figure(run.caption(), step_error_chart(drawn, colors, y_range, 1150, "error per rollout step, run " + run.letter)) +
         (notes.empty() ? "" : paragraph(escape(notes)));
}

// Every row's error at every step; a step above the row's budget is highlighted.
std::string step_errors_table(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run) {
  size_t steps = 0;
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows) steps = std::max(steps, parse_step_values(row->step_rel_l2_err).size());
  std::vector<std::string> header{"run", "backend/device", "phase", "status", "output"};
  for (size_t t = 0; t < steps; ++t) header.push_back("step " + std::to_string(t));
  Table table(header);
  for (size_t r = 0; r < runs.size(); ++r)
    for (const ResultRow* row : rows_per_run[r]) {
      if (!has_step_errors(*row)) continue;
      table.cell(runs[r].letter).cell(ladder_name(*row))
          .markup(marked_if_approximate(std::to_string(row->phase_index) + " " + row->phase, row->exact))
          .markup(status_badge(row->status)).cell(row->step_output);
      const std::vector<double> errors = parse_step_values(row->step_rel_l2_err), budget = parse_step_values(row->step_budget);
      for (size_t t = 0; t < steps; ++t) {
        const double error = t < errors.size() ? errors[t] : kMissing;
        const bool over_budget = t < budget.size() && !(error <= budget[t]) && !std::isnan(budget[t]);
        table.cell(format_number(error), over_budget ? "num differs" : "num");
      }
      table.end_row();
    }
  return "<details><summary>Error per step of every row</summary>" + table.html() +
         paragraph("Highlighted: above the row&rsquo;s budget for that step (or not a number).") + "</details>\n";
}

std::string workload_step_errors(const std::vector<Run>& runs, const WorkloadKey& key, const Colors& colors) {
  std::vector<Rows> rows_per_run, drawn_per_run;
  for (const Run& run : runs) {
    rows_per_run.push_back(rows_of(run, key));
    drawn_per_run.push_back(step_error_rows(rows_per_run.back(), kMaxStepLines));
  }
  const Range y_range = step_error_range(drawn_per_run);  // shared, so runs compare at a glance
  std::string outputs;
  for (const std::string& output : step_outputs(rows_per_run)) outputs += (outputs.empty() ? "" : ", ") + output;
  std::string html = "<h3 id=\"" + step_errors_anchor(key) + "\"><a href=\"#" + key.anchor() + "\">" +
                     escape(key.name()) + "</a> <span class=\"sub\">" + escape(key.size) + "</span></h3>\n" +
                     paragraph("Output: " + escape(outputs.empty() ? "-" : outputs) + ".");
  for (size_t r = 0; r < runs.size(); ++r) html += step_chart_figure(runs[r], rows_per_run[r], colors, y_range);
  return html + step_errors_table(runs, rows_per_run);
}

}  // namespace

std::string step_errors_section(const std::vector<Run>& runs, const Colors& colors) {
  std::string body;
  for (const WorkloadKey& key : workloads(runs)) {
    bool has_steps = false;
    for (const Run& run : runs)
      for (const ResultRow* row : rows_of(run, key)) has_steps = has_steps || has_step_errors(*row);
    if (has_steps) body += workload_step_errors(runs, key, colors);
  }
  if (body.empty()) return "";
  const std::string intro = paragraph(
      "Relative L2 error of each rollout step against the exact fp64 reference (log scale). Solid: exact phases "
      "(thin: phase 0); dashed: approximate phases (" + escape(kApproximateMeaning) + "), with their per-step "
      "budget dotted in the same color. Errors grow with the step: a rollout feeds each step's error into the next.");
  return section(kStepErrorsId, "Error per rollout step", intro + body);
}

// ---- roofline ------------------------------------------------------------------------------------

// One table row per GPU device of the run: the ceilings its rows' roofline_pct refers to, or why
// it has none.
void device_ceiling_rows(Table& table, const Run& run) {
  for (const auto& [device, gpu] : run.ceilings->devices) {
    const std::string bf16 = gpu.bf16_peak_gflop_per_s > 0 ? format_number(gpu.bf16_peak_gflop_per_s) + " GFLOP/s" : "none";
    table.cell(run.letter + " " + device + " (" + gpu.device.gpu + ")")
        .cell(format_number(gpu.bandwidth_gb_per_s) + " GB/s", "num")
        .cell(format_number(gpu.fp32_peak_gflop_per_s) + " GFLOP/s", "num")
        .cell(gpu.fp32_method + "; bf16 phases: " + bf16 + " (" + gpu.bf16_method + ")", "wrap")
        .cell(gpu.bandwidth_method, "wrap").cell("").cell(gpu.measured_at).cell(gpu.source, "wrap");
    table.end_row();
  }
  for (const auto& [device, why] : run.ceilings->devices_without_ceilings) {
    table.cell(run.letter + " " + device).cell("no ceilings: " + why + " (its rows have no roofline %)", "wrap")
        .cell("").cell("").cell("").cell("").cell("").cell("");
    table.end_row();
  }
}

// Per run: each workload's checked variant nearest to its bound (the highest roofline_pct of its
// OK rows, the reference's aside), on each device, farthest first: the table a reader checks a
// backend's optimized rows against the hardware by.
std::string nearest_to_the_bound_table(const Run& run) {
  std::map<std::pair<WorkloadKey, std::string>, const ResultRow*> best;  // by workload, size and device
  for (const ResultRow& row : run.data.rows) {
    if (row.status != Status::Ok || row.backend == kReferenceBackend || std::isnan(row.roofline_pct)) continue;
    const ResultRow*& held = best[{key_of(row), row.device}];
    if (!held || row.roofline_pct > held->roofline_pct) held = &row;
  }
  if (best.empty()) return "";
  std::vector<const ResultRow*> rows;
  for (const auto& [key, row] : best) rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ResultRow* a, const ResultRow* b) { return a->roofline_pct < b->roofline_pct; });
  Table table({"workload", "size", "device", "nearest variant", "median", "bound", "% of bound"});
  for (const ResultRow* row : rows) {
    // The variant as `run` names it; an approximate one badged, as in every other table.
    const std::string variant = row->backend + " " + std::to_string(row->phase_index) + "_" + row->phase;
    table.cell(key_of(*row).name()).cell(row->size).cell(row->device).markup(marked_if_approximate(variant, row->exact))
        .cell(format_ms(row->median_ms), "num").cell(row->bound.empty() ? "-" : row->bound)
        .cell(format_number(row->roofline_pct), row->roofline_pct < 50 ? "num differs" : "num");
    table.end_row();
  }
  return paragraph("Run " + escape(run.letter) + ": each workload's checked variant nearest to its bound, farthest "
                   "first (highlighted: below 50%). bound: the ceiling its roofline % is against: compute (the fp32 "
                   "peak), memory, the cache level its data are streamed from, or the workload's own floor, timed on "
                   "the host (machine.json's roofline.latency_floors): latency (a chain of dependent steps) or scatter "
                   "(one read-modify-write of an unpredictable address per item, over the run's threads).") +
         table.html();
}

// Where a run's short probe found this hour's ceilings off the cached ones beyond its noise: both,
// and that the run's rows are held to its own.
std::string recheck_note(const Run& run) {
  if (!run.ceilings || !roofline::differs_from_cache(*run.ceilings)) return "";
  const roofline::Ceilings& c = *run.ceilings;
  const roofline::Recheck& r = *c.recheck;
  return paragraph("Run " + escape(run.letter) + " measured its own ceilings: its short probe at the start found " +
                   format_number(c.bandwidth_gb_per_s) + " GB/s memory and " + format_number(c.peak_gflop_per_s) +
                   " GFLOP/s fp32, against " + format_number(r.cached_bandwidth_gb_per_s) + " GB/s and " +
                   format_number(r.cached_peak_gflop_per_s) + " GFLOP/s cached at " + escape(r.cached_measured_at) +
                   ", beyond the probe's noise (" + format_number(100 * r.noise) +
                   "%): the machine was not the same, and its roofline % is against this run's own.");
}

std::string roofline_section(const std::vector<Run>& runs, const Colors& colors) {
  std::vector<std::string> figures;
  Table table({"run", "bandwidth", "fp32 peak", "compute method", "bandwidth method", "threads", "measured", "source"});
  const auto ranges = roofline_ranges(runs);  // shared: runs side by side compare at a glance
  std::string nearest;
  for (const Run& run : runs) {
    nearest += recheck_note(run) + nearest_to_the_bound_table(run);
    figures.push_back(figure(run.caption(), roofline_chart(run, colors, ranges, chart_width(runs.size()))));
    if (!run.ceilings) {
      table.cell(run.letter).cell("no ceilings: " + run.ceilings_problem).cell("").cell("").cell("").cell("").cell("").cell("");
    } else {
      const roofline::Ceilings& c = *run.ceilings;
      table.cell(run.letter).cell(format_number(c.bandwidth_gb_per_s) + " GB/s", "num")
          .cell(format_number(c.peak_gflop_per_s) + " GFLOP/s", "num").cell(c.compute_method + ": " + c.compute_detail, "wrap")
          .cell(c.bandwidth_method, "wrap").cell(std::to_string(c.threads), "num").cell(c.measured_at).cell(c.source, "wrap");
    }
    table.end_row();
    if (run.ceilings) device_ceiling_rows(table, run);
  }
  return section("roofline", "Roofline",
                 charts_row(figures) +
                     paragraph("Achieved GFLOP/s of every timed row (declared flops over the median time) against "
                               "its arithmetic intensity (declared flops per declared byte), under the machine's "
                               "measured memory-bandwidth and fp32 compute ceilings. roofline_pct = achieved / "
                               "min(peak, intensity &times; bandwidth): a CPU row against the host's ceilings, a "
                               "GPU row against its GPU's own (the rows named by device below; bf16 phases against "
                               "the bf16 peak), never the host's. The chart draws the host's.") +
                     table.html() + nearest);
}

// ---- problems ------------------------------------------------------------------------------------

std::string problems_section(const std::vector<Run>& runs) {
  Table table({"run", "status", "case", "reason", "rel. L2 error", "tolerance", "output"});
  for (int failures_first = 1; failures_first >= 0; --failures_first)
    for (const Run& run : runs)
      for (const ResultRow& row : run.data.rows) {
        if (row.status == Status::Ok || is_failure(row.status) != static_cast<bool>(failures_first)) continue;
        table.cell(run.letter).markup(status_badge(row.status)).markup(marked_if_approximate(results::row_name(row), row.exact))
            .cell(row.reason, "wrap")
            .cell(format_number(row.rel_l2_err), "num").cell(format_number(row.tolerance), "num").cell(row.worst_output);
        table.end_row();
      }
  const std::string body = table.rows() == 0 ? paragraph("Every row of every run is OK.") : table.html();
  return section("problems", "Failing, skipped and unsupported rows", body);
}

// ---- disturbed rows -------------------------------------------------------------------------------

std::string disturbed_section(const std::vector<Run>& runs) {
  Table table({"run", "case", "why"});
  for (const Run& run : runs)
    for (const ResultRow& row : run.data.rows)
      if (!row.disturbed.empty()) {
        table.cell(run.letter).cell(results::row_name(row)).cell(row.disturbed, "wrap");
        table.end_row();
      }
  if (table.rows() == 0) return "";  // nothing to say, and no section for it
  return section("disturbed", "Rows disturbed by other work on the machine",
                 paragraph("Other work on the machine competed for these rows' cores while they were timed "
                           "(results.csv's disturbed column): their times say what the machine did to them, "
                           "not what the code does. compare, the gate and the history do not judge them; "
                           "measure them again on a quieter machine.") +
                     table.html());
}

// ---- machines ------------------------------------------------------------------------------------

namespace {

using Facts = std::vector<std::pair<std::string, std::string>>;

std::string caches_text(const nlohmann::json& machine) {
  if (!machine.is_object() || !machine.contains("cpu") || !machine["cpu"].is_object() ||
      !machine["cpu"].contains("caches") || !machine["cpu"]["caches"].is_array())
    return "-";
  std::string text;
  for (const nlohmann::json& cache : machine["cpu"]["caches"])
    text += (text.empty() ? "" : ", ") + std::string("L") + value_text(cache, "level", "?") + " " +
            value_text(cache, "type", "") + " " + value_text(cache, "size", "");
  return text;
}

std::string backend_text(const nlohmann::json& backend) {
  const bool available = backend.is_object() && backend.contains("available") && backend["available"] == true;
  std::string text = available ? "available" : "unavailable: " + value_text(backend, "unavailable_reason", "");
  if (backend.is_object() && backend.contains("config")) text += "; " + backend["config"].dump();
  return text;
}

Facts machine_facts(const nlohmann::json& machine) {
  Facts facts{{"fingerprint", top_text(machine, "fingerprint")},
              {"hostname", top_text(machine, "hostname")},
              {"CPU", machine_text(machine, "cpu", "model")},
              {"logical cores", machine_text(machine, "cpu", "logical_cores")},
              {"caches", caches_text(machine)},
              {"memory", top_text(machine, "memory")},
              {"OS", machine_text(machine, "os", "name") + ", kernel " + machine_text(machine, "os", "kernel") + ", " +
                         machine_text(machine, "os", "arch")},
              {"compiler", machine_text(machine, "build", "compiler")},
              {"build type", machine_text(machine, "build", "build_type")},
              {"compiler flags", machine_text(machine, "build", "cxx_flags")},
              {"phasebench", machine_text(machine, "build", "phasebench_version")},
              {"git commit", top_text(machine, "git_commit")},
              {"threads", top_text(machine, "threads")},
              {"OMP_NUM_THREADS", machine_text(machine, "environment", "OMP_NUM_THREADS")}};
  // Only where recorded (older runs have neither).
  if (const std::string state = interference::machine_state_in_words(machine); !state.empty())
    facts.emplace_back("other work on the machine", state);
  if (const std::string spin = machine_text(machine, "environment", "GOMP_SPINCOUNT"); !spin.empty() && spin != "-")
    facts.emplace_back("GOMP_SPINCOUNT", spin);
  if (machine.is_object() && machine.contains("backends") && machine["backends"].is_object())
    for (const auto& [name, backend] : machine["backends"].items()) facts.emplace_back("backend " + name, backend_text(backend));
  return facts;
}

}  // namespace

std::string machines_section(const std::vector<Run>& runs) {
  std::vector<std::string> header{"fact"}, names;
  std::vector<std::map<std::string, std::string>> values;
  for (const Run& run : runs) {
    header.push_back(run.letter);
    values.emplace_back();
    for (const auto& [name, value] : machine_facts(run.data.machine)) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      values.back()[name] = value;
    }
  }
  Table table(header, "machines");
  for (const std::string& name : names) {
    table.cell(name);
    std::set<std::string> distinct;
    for (const auto& run_values : values) distinct.insert(run_values.count(name) ? run_values.at(name) : "-");
    for (const auto& run_values : values)
      table.cell(run_values.count(name) ? run_values.at(name) : "-", distinct.size() > 1 ? "wrap differs" : "wrap");
    table.end_row();
  }
  std::string raw;
  for (const Run& run : runs)
    raw += "<details><summary>machine.json of run " + escape(run.letter) + "</summary><pre>" +
           escape(run.data.machine.is_null() ? "(none)" : run.data.machine.dump(2)) + "</pre></details>\n";
  return section("machines", "Machines", table.html() + (runs.size() > 1 ? paragraph("Highlighted: differs between runs.") : "") + raw);
}

// ---- all rows ------------------------------------------------------------------------------------

std::string all_rows_section(const std::vector<Run>& runs) {
  std::string body;
  for (const Run& run : runs) {
    Table table({"case", "status", "median", "95% CI", "vs prev", "vs phase 0", "vs reference", "claimed", "syncs",
                 "ops", "bytes alloc.", "GB/s", "GFLOP/s", "roofline %", "bound", "threads", "rel. L2 error", "tolerance"});
    for (const ResultRow& row : run.data.rows) {
      table.markup(marked_if_approximate(results::row_name(row), row.exact)).markup(status_badge(row.status)).cell(format_ms(row.median_ms), "num")
          .cell(format_interval(row.ci_low_ms, row.ci_high_ms, format_ms), "num").cell(format_ratio(row.speedup_vs_prev), "num")
          .cell(format_ratio(row.speedup_vs_phase0), "num").cell(format_ratio(row.speedup_vs_reference), "num")
          .cell(std::isnan(row.claimed_min) ? "-" : format_number(row.claimed_min) + "\xE2\x80\x93" + format_ratio(row.claimed_max), "num")
          .cell(format_number(row.host_syncs_per_iter), "num").cell(format_number(row.ops_per_iter), "num")
          .cell(format_number(row.bytes_alloc_per_iter), "num").cell(format_number(row.gb_per_s), "num")
          .cell(format_number(row.gflop_per_s), "num").cell(format_number(row.roofline_pct), "num")
          .cell(row.bound.empty() ? "-" : row.bound).cell(std::to_string(row.threads), "num").cell(format_number(row.rel_l2_err), "num")
          .cell(format_number(row.tolerance), "num");
      table.end_row();
    }
    body += "<details><summary>All " + std::to_string(run.data.rows.size()) + " rows of run " + escape(run.caption()) +
            "</summary>" + table.html() + "</details>\n";
  }
  return section("all-rows", "All rows", body);
}

}  // namespace pb::report
