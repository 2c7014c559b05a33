// Turning the registries and a selection into cases, and the once-per-process backend lifecycle.

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

// LeakSanitizer comes with AddressSanitizer (the asan preset) and runs its check at exit, which
// exit_without_library_teardown() skips: it is asked explicitly there instead.
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define PHASEBENCH_LEAK_SANITIZER 1
#else
#define PHASEBENCH_LEAK_SANITIZER 0
#endif

#include "phasebench/errors.hpp"
#include "phasebench/known_bugs.hpp"
#include "phasebench/runner.hpp"
#include "results/results_model.hpp"

namespace pb {

std::string Case::id() const {
  return workload->full_name() + "/" + ladder->backend + "/" + phase_name;
}

std::string Case::row_name() const {
  return workload->full_name() + "/" + to_string(size) + "/" + ladder->backend + "/" + device + "/" +
         std::to_string(phase) + "_" + phase_name +
         (threads_in_name ? "/threads=" + std::to_string(effective_threads()) : "");
}

int Case::effective_threads() const { return backend->effective_threads(threads); }

std::string Case::row_key() const {
  return results::row_key_of(workload->suite(), workload->name(), to_string(size), ladder->backend, device, phase_name,
                             effective_threads());
}

namespace {

// The phases a ladder gets rows for on one device, with the catalog entry of each: those it
// registers, and every catalog phase whose needs the backend lacks there (a generated SKIPPED or
// UNSUPPORTED row, so a gap shows on every backend without the backend spelling it out). The
// reference backend's single rung is the serial fp32 baseline.
std::vector<PhaseInfo> rungs_of(const Workload& workload, const VariantLadder& ladder, const Backend& backend,
                                const std::string& device) {
  if (ladder.backend == kReferenceBackend) {
    PhaseInfo serial;
    serial.name = kSerialRung;
    serial.description = "reference<float>: the naive loops";
    return {serial};
  }
  const std::vector<int> registered = phase_indices(ladder, workload);
  std::vector<PhaseInfo> rungs;
  for (const PhaseInfo& info : workload.phases()) {
    const bool registers = std::find(registered.begin(), registered.end(), info.index) != registered.end();
    if (registers || !missing_needs(info, backend.capabilities(device)).empty()) rungs.push_back(info);
  }
  return rungs;
}

std::vector<DeviceInfo> devices_of(const Backend& backend) {
  std::vector<DeviceInfo> devices = backend.devices();
  const std::string why_not = backend.unavailable_reason();
  if (!why_not.empty())
    for (DeviceInfo& device : devices)
      if (device.unavailable_reason.empty()) device.unavailable_reason = why_not;
  return devices;
}

void validate(const Selection& selection) {
  if (!selection.suite.empty()) {
    bool known = false;
    for (const auto& workload : registered_workloads()) known |= workload->suite() == selection.suite;
    if (!known) throw InputError("unknown suite '" + selection.suite + "' (see `phasebench list`)");
  }
  const int shard = selection.shard_index, shards = selection.shard_count;
  if (shards < 1 || shard < 1 || shard > shards)
    throw InputError("--shard " + std::to_string(shard) + "/" + std::to_string(shards) +
                     " is not i/n with 1 <= i <= n");
  for (const std::string& name : selection.backends)
    if (!find_backend(name))
      throw InputError("unknown backend '" + name + "' (see `phasebench list`; a backend that was "
                       "not built is listed by the configure summary)");
}

std::regex compile_filter(const std::string& filter) {
  try {
    return std::regex(filter.empty() ? std::string(".*") : filter, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    throw InputError("--filter '" + filter + "' is not a valid regular expression: " + error.what());
  }
}

std::string ladder_key(const Case& c) {
  return c.workload->full_name() + "/" + c.ladder->backend + "/" + c.device;
}

}  // namespace

std::vector<Case> cases_of_shard(std::vector<Case> cases, const Selection& selection) {
  if (selection.shard_count <= 1) return cases;
  const auto point_key = [](const Case& c) { return ladder_key(c) + "@" + to_string(c.size); };
  std::set<std::string> keys;
  for (const Case& c : cases) keys.insert(point_key(c));
  const std::vector<std::string> sorted(keys.begin(), keys.end());
  std::vector<Case> mine;
  for (Case& c : cases) {
    const auto position = std::lower_bound(sorted.begin(), sorted.end(), point_key(c)) - sorted.begin();
    if (position % selection.shard_count + 1 == selection.shard_index) mine.push_back(std::move(c));
  }
  return mine;
}

std::vector<Case> plan_cases(const Selection& selection, SizeClass size) {
  validate(selection);
  const std::regex filter = compile_filter(selection.filter);
  static const std::vector<VariantLadder> ladders = registered_ladders();
  std::vector<Case> cases;
  for (const VariantLadder& ladder : ladders) {
    const auto workload = find_workload(ladder.workload);
    const auto backend = find_backend(ladder.backend);
    if (!workload || !backend) continue;  // a variant of a workload/backend that was not built
    if (!selection.suite.empty() && workload->suite() != selection.suite) continue;
    const auto& wanted = selection.backends;
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), ladder.backend) == wanted.end())
      continue;
    for (const DeviceInfo& device : devices_of(*backend)) {
      for (const PhaseInfo& info : rungs_of(*workload, ladder, *backend, device.name)) {
        Case c{workload, backend, &ladder, device.name, device.unavailable_reason,
               info.index, info.name, info.exact, size, {}, std::nullopt,
               known_bug(workload->full_name(), info.name)};
        if (ladder.backend != kReferenceBackend) {
          c.plan = without_known_bugs(
              *workload, info.index, derive_phase_plan(workload->phases(), info.index, backend->capabilities(device.name)));
          c.capability_gap = capability_gap(info, *backend, device.name);
        }
        if (auto reason = workload->size_unsupported_reason(size))
          c.capability_gap = CannotRun{CannotRun::Kind::Unsupported, std::move(*reason)};
        if (std::regex_search(c.id(), filter)) cases.push_back(std::move(c));
      }
    }
  }
  if (cases.empty())  // a typo in --filter must not pass as an empty, successful run
    throw InputError("the selection matches no variant (--filter is searched in suite/workload/backend/phase, "
                     "e.g. 'trainer2/window/kokkos/inplace'; see `phasebench list`)");
  const Workload* checked = nullptr;  // a scale without a valid shape is refused before anything runs
  for (const Case& c : cases)
    if (c.workload.get() != checked) require_valid_size(*(checked = c.workload.get()), size);
  return cases_of_shard(std::move(cases), selection);
}

namespace {
std::vector<std::shared_ptr<Backend>>& initialized_backends() {
  static std::vector<std::shared_ptr<Backend>> backends;
  return backends;
}
}  // namespace

bool runs_in_worker(const Case& c, const std::vector<int>& thread_counts, int worker_threads) {
  if (c.backend->threads_change_in_process()) return !thread_counts.empty() && worker_threads == thread_counts.front();
  return c.threads == worker_threads;
}

// OpenMP's count is oneDNN's and the plain code's: primitives size their scratchpads from it when
// they are created, so it is set before a case's setup and again before each of its runs.
void use_threads_of(const Case& c) {
  omp_set_num_threads(c.threads);
  if (c.backend->threads_change_in_process()) c.backend->use_threads(c.threads);
}

void init_backends(const std::vector<Case>& cases, int threads) {
  std::map<const Backend*, int> most_threads;
  for (const Case& c : cases) {
    int& most = most_threads.emplace(c.backend.get(), threads).first->second;
    most = std::max(most, c.threads);
  }
  auto& done = initialized_backends();
  for (const Case& c : cases) {
    if (std::find(done.begin(), done.end(), c.backend) != done.end()) continue;
    if (!c.backend->unavailable_reason().empty()) continue;
    const int backend_threads = most_threads.at(c.backend.get());
    omp_set_num_threads(backend_threads);  // Kokkos compares its count with OpenMP's
    c.backend->init(RuntimeOptions{backend_threads});
    done.push_back(c.backend);
  }
  omp_set_num_threads(threads);
}

size_t finalize_backends() {
  auto& done = initialized_backends();
  const size_t count = done.size();
  for (auto it = done.rbegin(); it != done.rend(); ++it) (*it)->finalize();
  done.clear();
  return count;
}

void exit_without_library_teardown(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if PHASEBENCH_LEAK_SANITIZER
  __lsan_do_leak_check();  // exits with LeakSanitizer's own code when it finds a leak
#endif
  std::_Exit(code);
}

}  // namespace pb
