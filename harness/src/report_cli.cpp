#include "report_cli.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#include "report.hpp"

namespace pb {

ReportCommand::ReportCommand(CLI::App& app)
    : command_(app.add_subcommand("report", "HTML report with charts of one or more runs (side by side)")) {
  command_->add_option("runs", runs_, "run directories (or their results.csv), shown as A, B, ...")->required();
  command_->add_option("--out", out_, "the HTML file to write (must not exist)")->required();
}

std::optional<int> ReportCommand::run_chosen() {
  if (!*command_) return std::nullopt;
  for (const std::string& note : report::write_report(runs_, out_)) std::cout << "note: " << note << "\n";
  std::cout << "report: " << out_ << "\n";
  return 0;
}

}  // namespace pb
