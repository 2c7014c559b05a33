#include "commands/report_cli.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#include "history/history_store.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "report/report.hpp"
#include "report/report_history.hpp"

namespace pb {

ReportCommand::ReportCommand(CLI::App& app)
    : command_(app.add_subcommand("report", "HTML report with charts of one or more runs (side by side), or of "
                                            "the results history's trends (--history)")) {
  command_->add_option("runs", runs_, "run directories (or their results.csv), shown as A, B, ...");
  command_->add_option("--out", out_, "the HTML file to write (must not exist)")->required();
  command_->add_option("--history", history_,
                       "instead of runs: the trends of this history (a SQLite file or a postgresql:// URL) with "
                       "their detected steps");
  command_->add_flag("--ratio", trend_options_.ratio, "with --history: each row over its workload's reference");
  add_series_selection_options(*command_, trend_options_, "with --history: ");
  command_->add_option("--commit-url", commit_url_,
                       "with --history: the repository's web address, to link steps to their commits (default: "
                       "from the CI's variables)");
}

std::optional<int> ReportCommand::run_chosen() {
  if (!*command_) return std::nullopt;
  if (history_.empty() == runs_.empty())
    throw InputError("report takes run directories or --history DB (one of the two)");
  if (!history_.empty()) return write_history();
  for (const std::string& note : report::write_report(runs_, out_)) std::cout << "note: " << note << "\n";
  std::cout << "report: " << out_ << "\n";
  return 0;
}

int ReportCommand::write_history() {
  report::require_new_page_path(out_);
  history::HistoryStore store = history::HistoryStore::open(history_);
  const auto series = history::build_trends(store.trend_rows("", ""), trend_options_);
  const std::string url = commit_url_.empty() ? report::repository_url_from_environment() : commit_url_;
  const std::string html = report::render_history(series, store.connection().description(), url);
  report::require_new_page_path(out_);
  write_file_atomically(out_, html);
  std::cout << "report: " << out_ << " (" << series.size() << " series)\n";
  return 0;
}

}  // namespace pb
