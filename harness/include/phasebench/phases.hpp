#pragma once
// The phase model. A suite's catalog owns what every phase means: the one optimization it adds and
// what that optimization needs of a backend or device (a caching allocator, graph capture, ...).
// A backend declares what it has on each device. From the two the harness derives, once per case,
// the set of optimizations in effect (a PhasePlan); a variant asks that set, never a phase number:
//
//   if (context.has(kInPlace)) accumulate_in_place(); else accumulate();
//
// and the SKIPPED/UNSUPPORTED rows of a missing capability are written by the harness from the
// catalog and the declaration (capability_gap), so no backend spells such a reason itself.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pb {

/// Something a phase's optimization may need that not every backend or device has.
enum class Capability {
  CachingAllocator,  // a device allocator that keeps freed blocks in a cache the code can empty
  GraphCapture,      // recording a sequence of device launches once and replaying it as one graph
  Bf16,              // bf16 storage and arithmetic (fp32 accumulation), native or emulated
  Autograd,          // a recorded autograd graph (requires_grad, backward, detach)
};

using Capabilities = std::set<Capability>;

/// "caching_allocator": the name in catalogs, `phasebench list` and catalog.json.
std::string_view to_string(Capability capability);
/// One phrase for the reasons: "a caching device allocator whose cache can be emptied".
std::string_view describe(Capability capability);
std::optional<Capability> parse_capability(std::string_view name);

/// The optimizations in effect at one phase of one ladder on one device. Derived by the harness
/// (derive_phase_plan); variants only ask it.
class PhasePlan {
 public:
  PhasePlan() = default;
  PhasePlan(std::vector<std::string> catalog, std::set<std::string> active)
      : catalog_(std::move(catalog)), active_(std::move(active)) {}

  /// Whether the named optimization is in effect. Throws std::logic_error for a name the
  /// workload's catalog does not have, so a misspelt optimization fails its variant's check
  /// instead of silently reading as "off".
  bool has(std::string_view optimization) const;
  const std::set<std::string>& active() const { return active_; }

 private:
  std::vector<std::string> catalog_;  // every optimization name of the workload's catalog
  std::set<std::string> active_;
};

}  // namespace pb
