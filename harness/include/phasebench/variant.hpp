#pragma once
// A variant: one (workload, backend, phase) implementation. A variant file registers itself with
// a VariantRegistration; nothing else is edited to add one.
//
// Lifecycle, per (size, device): construct -> support() -> setup(inputs) -> [poison_outputs() ->
// run() -> outputs()] for each check -> run() many times for timing. The harness calls the
// backend's synchronize() around every timed run(), so run() need not block.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "phasebench/arrays.hpp"
#include "phasebench/workload.hpp"

namespace pb {

/// What a variant is built for.
struct VariantContext {
  const Workload* workload = nullptr;
  SizeClass size = SizeClass::Small;
  std::string device;  // as the backend names it: "cpu", "cuda"
  int phase = 0;  // the catalog index, for messages only: ask `has`, never compare numbers
  int threads = 1;
  PhasePlan plan;  // the optimizations in effect, derived by the harness from the catalog

  /// Whether `optimization` (a catalog phase name) is in effect for this variant.
  bool has(std::string_view optimization) const { return plan.has(optimization); }
};

/// Why a variant cannot run here. SKIPPED: it could run elsewhere (no device, a phase for GPUs
/// only); UNSUPPORTED: this variant does not implement that size or device at all.
struct CannotRun {
  enum class Kind { Skipped, Unsupported } kind = Kind::Skipped;
  std::string reason;
};

class Variant {
 public:
  virtual ~Variant() = default;

  /// Cheap; called before setup(). A reason when this size/device/phase cannot run here.
  virtual std::optional<CannotRun> support() const { return std::nullopt; }
  /// Moves inputs to the device and allocates buffers. Not timed. May throw.
  virtual void setup(const ArrayMap& inputs) = 0;
  /// Writes NaN into every output buffer the variant keeps, so an unwritten output fails.
  virtual void poison_outputs() = 0;
  /// One iteration of the workload. Timed. May return before the device has finished.
  virtual void run() = 0;
  /// Copies the outputs of the last run() back to the host (blocks). Not timed.
  virtual ArrayMap outputs() = 0;
};

using VariantFactory = std::function<std::unique_ptr<Variant>(const VariantContext&)>;

/// One ladder of phases for one (workload, backend); the factory builds any phase of it.
struct VariantLadder {
  std::string workload;  // full name, "trainer2/lior_step"
  std::string backend;
  // The phases it implements, by catalog name ("baseline", "inplace", ...). A catalog phase whose
  // needs the backend lacks is left out: the harness writes its SKIPPED/UNSUPPORTED row.
  std::vector<std::string> phases;
  VariantFactory make;
  std::string source_file;
};

struct VariantRegistration {
  VariantRegistration(std::string workload, std::string backend, std::vector<std::string> phases,
                      VariantFactory make, const char* source_file = __builtin_FILE());
};

/// The catalog indices of `ladder`'s phases, in index order. Throws std::logic_error naming the
/// source file when the ladder names a phase the workload's catalog lacks.
std::vector<int> phase_indices(const VariantLadder& ladder, const Workload& workload);

std::vector<VariantLadder> registered_ladders();  // sorted by (workload, backend)

}  // namespace pb
