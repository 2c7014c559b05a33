#pragma once
// The checks recorded in a dump's manifest.json (docs/file-formats.md "Dump directories"): `dump`
// writes them, `check` reads them back and holds outputs computed elsewhere to them.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "phasebench/workload.hpp"

namespace pb::dump_manifest {

/// The phase whose checks a dump records: phase 0, the plain port of the original code (an exact
/// phase), which is what code computing the workload as the original does is held to.
constexpr int kCheckedPhase = 0;

/// The checks a dump's outputs are held to at the dump's size (a rollout's step budgets follow its
/// steps, an optimizer step's outputs its tensors).
std::vector<OutputSpec> checks_for(const Workload& workload, SizeClass size);

/// The manifest's "checks": {"phase": 0, "outputs": [...]}, each output as catalog.json writes it.
nlohmann::ordered_json checks_json(const std::vector<OutputSpec>& checks);
/// The manifest's "tolerances": {output: {"rel_l2", "reason"}}, the summary scripts read.
nlohmann::json tolerances_json(const std::vector<OutputSpec>& checks);

/// The checks a manifest recorded; throws InputError naming what is missing or malformed.
std::vector<OutputSpec> checks_from(const nlohmann::json& manifest);

/// The first difference between the checks a dump recorded and this phasebench's, or empty:
/// "output s: tolerance 0.001 in the dump, 1e-05 here".
std::string describe_difference(const std::vector<OutputSpec>& dumped, const std::vector<OutputSpec>& here);

}  // namespace pb::dump_manifest
