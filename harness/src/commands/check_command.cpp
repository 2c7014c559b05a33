#include "commands/check_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "commands/dump_manifest.hpp"
#include "phasebench/check.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/npy.hpp"

namespace pb::commands {
namespace fs = std::filesystem;
namespace {

const char* const kHowToDump = "write one with `phasebench dump --workload W --out DIR`";

// What `check` takes from a dump: its identity, the checks its manifest recorded (once they are
// known to be this phasebench's), and the reference arrays those checks compare with.
struct Dump {
  std::string workload;
  std::string size;
  std::string seed;
  std::vector<OutputSpec> checks;
  ArrayMap reference;
};

// ---- the dump ------------------------------------------------------------------------------------

nlohmann::json read_manifest(const fs::path& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw InputError("DUMP_DIR " + dir.string() + " is not a directory (" + kHowToDump + ")");
  const fs::path path = dir / "manifest.json";
  if (!fs::is_regular_file(path, error))
    throw InputError(dir.string() + " is not a dump: it has no manifest.json (" + kHowToDump + ")");
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& bad) {
    throw InputError(path.string() + " is not JSON: " + bad.what());
  }
  if (!manifest.is_object()) throw InputError(path.string() + " is not a JSON object");
  return manifest;
}

std::string string_field(const nlohmann::json& manifest, const char* key) {
  if (!manifest.contains(key) || !manifest[key].is_string())
    throw InputError(std::string("manifest.json has no \"") + key + "\" string: not a dump of this phasebench (" +
                     kHowToDump + ")");
  return manifest[key].get<std::string>();
}

// The manifest's checks, refused when they are not this phasebench's: outputs judged with
// another version's tolerances would pass or fail by a rule this binary does not hold.
std::vector<OutputSpec> agreed_checks(const nlohmann::json& manifest, const Workload& workload, SizeClass size) {
  const std::vector<OutputSpec> dumped = dump_manifest::checks_from(manifest);
  const std::string difference = dump_manifest::describe_difference(dumped, dump_manifest::checks_for(workload, size));
  if (!difference.empty()) {
    const std::string version = manifest.contains("phasebench_version") ? manifest["phasebench_version"].dump() : "unknown";
    throw InputError("the dump's checks differ from this phasebench's (" PHASEBENCH_VERSION ", the dump's " + version +
                     "): " + difference + "; dump the inputs again with this phasebench, or check with the one that wrote them");
  }
  if (manifest.value("tolerances", nlohmann::json()) != dump_manifest::tolerances_json(dumped))
    throw InputError("manifest.json: \"tolerances\" disagrees with \"checks\": the dump was changed after it was written");
  return dumped;
}

// The file of the manifest's array `name` of `role`, a path inside the dump (never outside it).
const nlohmann::json& array_entry(const nlohmann::json& manifest, const std::string& role, const std::string& name) {
  if (!manifest.contains("arrays") || !manifest["arrays"].is_array()) throw InputError("manifest.json has no \"arrays\" list");
  for (const nlohmann::json& entry : manifest["arrays"])
    if (entry.is_object() && entry.value("role", "") == role && entry.value("name", "") == name) {
      if (!entry.contains("file") || !entry["file"].is_string() || !entry.contains("shape") || !entry["shape"].is_array())
        throw InputError("manifest.json: the entry of " + role + " array " + name + " lacks its file or its shape");
      return entry;
    }
  throw InputError("manifest.json lists no " + role + " array " + name + ": the dump is incomplete, dump it again");
}

HostArray read_reference(const fs::path& dir, const nlohmann::json& manifest, const std::string& name) {
  const nlohmann::json& entry = array_entry(manifest, "reference", name);
  const fs::path file = entry["file"].get<std::string>();
  const auto leaves = std::find(file.begin(), file.end(), fs::path("..")) != file.end();
  if (file.is_absolute() || leaves) throw InputError("manifest.json: reference array " + name + "'s file " + file.string() + " is outside the dump");
  NpyArray stored = read_npy(dir / file);
  nlohmann::json shape = stored.array.shape;
  if (shape != entry["shape"])
    throw InputError((dir / file).string() + " has shape " + stored.array.shape_string() + ", the manifest says " +
                     entry["shape"].dump() + ": the dump was changed after it was written");
  return std::move(stored.array);
}

Dump load_dump(const fs::path& dir) {
  const nlohmann::json manifest = read_manifest(dir);
  Dump dump;
  dump.workload = string_field(manifest, "workload");
  dump.size = string_field(manifest, "size");
  dump.seed = manifest.contains("seed") ? manifest["seed"].dump() : "?";
  const auto workload = find_workload(dump.workload);
  if (!workload)
    throw InputError("the dump's workload '" + dump.workload + "' is not one of this phasebench's (see `phasebench list`)");
  const auto size = parse_size(dump.size);
  if (!size)
    throw InputError("the dump's size '" + dump.size +
                     "' is none of small, default, large, a scale such as 0.25x nor a random shape such as random-3");
  dump.checks = agreed_checks(manifest, *workload, *size);
  for (const OutputSpec& spec : dump.checks)
    if (!dump.reference.count(spec.reference_name()))
      dump.reference[spec.reference_name()] = read_reference(dir, manifest, spec.reference_name());
  return dump;
}

// ---- the outputs ---------------------------------------------------------------------------------

std::string output_files(const std::vector<OutputSpec>& checks) {
  std::string names;
  for (const OutputSpec& spec : checks) names += (names.empty() ? "" : ", ") + spec.name + ".npy";
  return names;
}

// A .npy file that is no output is most likely one misnamed: refused, never silently ignored.
void refuse_extra_files(const fs::path& dir, const std::vector<OutputSpec>& checks) {
  std::vector<std::string> extra;
  std::error_code error;
  fs::directory_iterator entries(dir, error);
  if (error) throw InputError("cannot list OUTPUTS_DIR " + dir.string() + ": " + error.message());
  for (const fs::directory_entry& entry : entries) {
    const std::string file = entry.path().filename().string();
    const bool is_output = std::any_of(checks.begin(), checks.end(), [&](const OutputSpec& s) { return s.name + ".npy" == file; });
    if (entry.path().extension() == ".npy" && !is_output) extra.push_back(file);
  }
  std::sort(extra.begin(), extra.end());
  if (!extra.empty())
    throw InputError("extra output " + (dir / extra.front()).string() + (extra.size() > 1 ? " (and " + std::to_string(extra.size() - 1) + " more)" : "") +
                     ": the dump's outputs are " + output_files(checks));
}

HostArray read_output(const fs::path& dir, const OutputSpec& spec, const std::vector<OutputSpec>& checks,
                      const HostArray& reference) {
  const fs::path path = dir / (spec.name + ".npy");
  std::error_code error;
  if (!fs::exists(path, error))
    throw InputError("output " + spec.name + " missing: no " + path.string() + " (the dump's outputs are " + output_files(checks) + ")");
  NpyArray output = read_npy(path);
  // An integer output (a ring pointer) may stay an integer; any other output is a float.
  const bool integer_allowed = reference.element_type == ElementType::Int64;
  if (output.dtype == "int64" && !integer_allowed)
    throw InputError(path.string() + " has dtype int64: outputs are float16, float32 or float64");
  if (output.array.shape != reference.shape)
    throw InputError(path.string() + " has shape " + output.array.shape_string() + ", the reference output " +
                     spec.reference_name() + " has " + reference.shape_string());
  return std::move(output.array);
}

ArrayMap read_outputs(const fs::path& dir, const Dump& dump) {
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw InputError("OUTPUTS_DIR " + dir.string() + " is not a directory (it holds one <output>.npy per output)");
  refuse_extra_files(dir, dump.checks);
  ArrayMap outputs;
  for (const OutputSpec& spec : dump.checks)
    outputs[spec.name] = read_output(dir, spec, dump.checks, dump.reference.at(spec.reference_name()));
  return outputs;
}

// ---- the verdict ---------------------------------------------------------------------------------

std::string index_text(size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t axis = shape.size(); axis-- > 0;) {
    index[axis] = static_cast<int64_t>(flat % static_cast<size_t>(shape[axis]));
    flat /= static_cast<size_t>(shape[axis]);
  }
  return HostArray{index, {}, ElementType::Int64}.shape_string();
}

// The step nearest its budget (or the last step when there is no budget), and how it stands.
std::string step_text(const OutputError& error) {
  std::ostringstream text;
  text.precision(3);
  if (error.first_step_over_budget >= 0) {
    const auto t = static_cast<size_t>(error.first_step_over_budget);
    text << "; step " << t << " rel_l2_err " << error.step_errors[t] << " > budget " << error.step_budget[t];
    return text.str();
  }
  size_t nearest = error.step_errors.size() - 1;
  for (size_t t = 0; t < error.step_budget.size() && t < error.step_errors.size(); ++t)
    if (error.step_errors[t] / error.step_budget[t] > error.step_errors[nearest] / error.step_budget[nearest]) nearest = t;
  text << "; steps: " << error.step_errors.size() << ", nearest its budget step " << nearest << " rel_l2_err "
       << error.step_errors[nearest];
  if (nearest < error.step_budget.size()) text << " <= budget " << error.step_budget[nearest];
  return text.str();
}

// The output's name and, when it is compared with another reference array, that array's name.
std::string compared_name(const OutputSpec& spec) {
  return spec.reference_name() == spec.name ? spec.name : spec.name + " vs " + spec.reference_name();
}

// "OK         s      rel_l2_err 3.1e-08 <= tolerance 1e-05, max_abs_err 2.4e-07 at [3,5] (5.12 vs reference 5.12)",
// names padded to `name_width`.
std::string output_line(const OutputSpec& spec, const CheckResult& result, const HostArray& output,
                        const HostArray& reference, size_t name_width) {
  std::ostringstream text;
  text.precision(3);
  text << "  " << std::left << std::setw(11) << to_string(result.status);
  if (result.outputs.empty()) return text.str() + compared_name(spec) + ": " + result.reason;  // MISTRUSTED or NaN/Inf
  const OutputError& error = result.outputs.front();
  text << std::setw(static_cast<int>(name_width)) << compared_name(spec) << "  rel_l2_err " << error.rel_l2_err
       << (error.rel_l2_err <= error.tolerance ? " <= " : " > ") << "tolerance " << error.tolerance << ", max_abs_err "
       << error.max_abs_err;
  if (error.max_abs_err > 0) {
    text.precision(9);
    if (!reference.shape.empty()) text << " at " << index_text(error.max_abs_index, reference.shape);
    text << " (" << output.values[error.max_abs_index] << " vs reference " << reference.values[error.max_abs_index] << ")";
  }
  if (!error.step_errors.empty()) text << step_text(error);
  return text.str();
}

}  // namespace

int check(const CheckCommand& command) {
  const Dump dump = load_dump(command.dump_dir);
  const ArrayMap outputs = read_outputs(command.outputs_dir, dump);
  std::cout << "checking " << command.outputs_dir << " against the dump of " << dump.workload << " (size " << dump.size
            << ", seed " << dump.seed << ") in " << command.dump_dir << "\n";
  size_t name_width = 0;
  for (const OutputSpec& spec : dump.checks) name_width = std::max(name_width, compared_name(spec).size());
  int passed = 0;
  std::string failed;
  for (const OutputSpec& spec : dump.checks) {
    // One output at a time through verify's own check, so that every output gets its line.
    const CheckResult result = check_outputs(outputs, dump.reference, {spec});
    std::cout << output_line(spec, result, outputs.at(spec.name), dump.reference.at(spec.reference_name()), name_width)
              << "\n";
    if (result.status == Status::Ok) ++passed;
    else failed += (failed.empty() ? "" : ", ") + spec.name;
  }
  std::cout << dump.workload << ": " << passed << " of " << dump.checks.size() << " outputs pass"
            << (failed.empty() ? "" : "; failed: " + failed) << "\n";
  return failed.empty() ? 0 : 1;
}

}  // namespace pb::commands
