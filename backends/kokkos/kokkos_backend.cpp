// The "kokkos" backend: one device, the default execution space ("cpu" for Serial, OpenMP and
// Threads builds; "cuda", "hip", ... for device builds). Kokkos is initialized once per process
// (unless the program already did it) and finalized after the harness has destroyed every
// variant, since a View outliving Kokkos::finalize is an error.
//
// Counting uses Kokkos Tools callbacks, installed only between start_counting() and
// stop_counting() so timed runs pay nothing: each parallel_for / parallel_reduce /
// parallel_scan and each deep_copy is one dispatched op; allocate_data reports View bytes.
//
// Measured on Kokkos 3.4.01 (Debian 12, Serial) with no tools library loaded: the callbacks DO
// fire once set with set_*_callback(). Kokkos dispatches to tools when profileLibraryLoaded()
// is true, and that function only compares the current callback set with the empty one, so
// installing any callback "loads" the tools interface; no init callback or KOKKOS_TOOLS_LIBS is
// needed. Restoring the empty set turns dispatch off again (profileLibraryLoaded() == false).
// Side effects seen: creating a View also dispatches a parallel_for
// ("Kokkos::View::initialization [label]"), which is counted (it is a real kernel on a device),
// and deep_copy reports even when source and destination are the same host memory.

#include "backends/kokkos/kokkos_backend.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "phasebench/backend.hpp"

namespace pb::kokkos_backend {

bool device_is_gpu() {
  return !std::is_same<ExecSpace, Kokkos::DefaultHostExecutionSpace>::value;
}

std::string device_name() {
  if (!device_is_gpu()) return "cpu";
  std::string name = ExecSpace::name();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

namespace {

namespace tools = Kokkos::Tools::Experimental;

// ---- counting through Kokkos Tools ------------------------------------------------------------

// The callbacks in place before start_counting(): a tool loaded with KOKKOS_TOOLS_LIBS keeps
// receiving its events while phasebench counts, and gets them back alone afterwards.
tools::EventSet callbacks_before_counting{};

void count_parallel_for(const char* name, uint32_t device_id, uint64_t* kernel_id) {
  pb::counters::note_ops();
  if (auto chained = callbacks_before_counting.begin_parallel_for)
    chained(name, device_id, kernel_id);
}

void count_parallel_reduce(const char* name, uint32_t device_id, uint64_t* kernel_id) {
  pb::counters::note_ops();
  if (auto chained = callbacks_before_counting.begin_parallel_reduce)
    chained(name, device_id, kernel_id);
}

void count_parallel_scan(const char* name, uint32_t device_id, uint64_t* kernel_id) {
  pb::counters::note_ops();
  if (auto chained = callbacks_before_counting.begin_parallel_scan)
    chained(name, device_id, kernel_id);
}

void count_allocation(Kokkos_Profiling_SpaceHandle space, const char* label, const void* pointer,
                      uint64_t bytes) {
  pb::counters::note_allocation(static_cast<int64_t>(bytes));
  if (auto chained = callbacks_before_counting.allocate_data) chained(space, label, pointer, bytes);
}

void count_deallocation(Kokkos_Profiling_SpaceHandle space, const char* label, const void* pointer,
                        uint64_t bytes) {
  pb::counters::note_release(static_cast<int64_t>(bytes));  // the bytes held per step
  if (auto chained = callbacks_before_counting.deallocate_data) chained(space, label, pointer, bytes);
}

// A deep_copy is a dispatched operation (a memcpy or copy kernel on a device). Whether it is
// also a host sync depends on its direction and is counted by the helpers in the header.
void count_deep_copy(Kokkos_Profiling_SpaceHandle dst_space, const char* dst_label,
                     const void* dst, Kokkos_Profiling_SpaceHandle src_space,
                     const char* src_label, const void* src, uint64_t bytes) {
  pb::counters::note_ops();
  if (auto chained = callbacks_before_counting.begin_deep_copy)
    chained(dst_space, dst_label, dst, src_space, src_label, src, bytes);
}

// ---- runtime description -----------------------------------------------------------------------

std::string kokkos_version() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
         "." + std::to_string(KOKKOS_VERSION % 100);
}

// Execution spaces compiled into this Kokkos (the default one is the first enabled of these in
// Kokkos' own order: device spaces first, then the parallel host spaces, then Serial).
std::vector<std::string> enabled_execution_spaces() {
  std::vector<std::string> spaces;
#ifdef KOKKOS_ENABLE_CUDA
  spaces.push_back("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  spaces.push_back("HIP");
#endif
#ifdef KOKKOS_ENABLE_SYCL
  spaces.push_back("SYCL");
#endif
#ifdef KOKKOS_ENABLE_OPENMPTARGET
  spaces.push_back("OpenMPTarget");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  spaces.push_back("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  spaces.push_back("Threads");
#endif
#ifdef KOKKOS_ENABLE_HPX
  spaces.push_back("HPX");
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  spaces.push_back("Serial");
#endif
  return spaces;
}

// Serial ignores a thread count; every other host space takes it as the size of its pool.
constexpr bool host_space_takes_thread_count() {
#ifdef KOKKOS_ENABLE_SERIAL
  return !std::is_same<Kokkos::DefaultHostExecutionSpace, Kokkos::Serial>::value;
#else
  return true;
#endif
}

// Kokkos' start-up warnings are turned off: OpenMP's prints to stdout, in every process, that
// OMP_PROC_BIND is unset (machine.json records OMP_PROC_BIND and OMP_PLACES instead), and its
// oversubscription warning cannot fire on a thread count the harness chose (init_backends() sets
// OpenMP's count to --threads just before, and Kokkos compares the two).
void initialize_kokkos(int threads) {
#if KOKKOS_VERSION >= 30700
  Kokkos::InitializationSettings settings;
  if (host_space_takes_thread_count()) settings.set_num_threads(threads);
  settings.set_disable_warnings(true);
  Kokkos::initialize(settings);
#else
  Kokkos::InitArguments arguments;
  if (host_space_takes_thread_count()) arguments.num_threads = threads;
  arguments.disable_warnings = true;
  Kokkos::initialize(arguments);
#endif
}

// Where this Kokkos came from (the configure step names it: built by ci/install-kokkos.sh, the
// system's, or given by the user).
#ifdef PHASEBENCH_KOKKOS_ORIGIN
constexpr const char* kokkos_origin = PHASEBENCH_KOKKOS_ORIGIN;
#else
constexpr const char* kokkos_origin = "unknown";
#endif

class KokkosBackend final : public Backend {
 public:
  std::string name() const override { return "kokkos"; }

  std::vector<DeviceInfo> devices() const override {
    const std::string description = "Kokkos " + kokkos_version() + ", execution space " + ExecSpace::name() +
                                    threads_text() + ", memory space " + MemSpace::name() + "; " + kokkos_origin;
    return {{device_name(), device_is_gpu(), "", description}};
  }

  // Kokkos can be initialized only once per process: if the program already did it, use it as
  // it is (and leave its finalization to the program).
  void init(const RuntimeOptions& options) override {
    threads_requested_ = options.threads;
    if (Kokkos::is_initialized()) return;
#if KOKKOS_VERSION >= 40000
    // Kokkos 3 may be initialized again after finalize (checked on 3.4); Kokkos 4 aborts.
    if (Kokkos::is_finalized())
      throw std::runtime_error("Kokkos 4 cannot be initialized again after Kokkos::finalize");
#endif
    initialize_kokkos(options.threads);
    initialized_here_ = true;
  }

  void finalize() override {
    if (initialized_here_ && Kokkos::is_initialized()) Kokkos::finalize();
    initialized_here_ = false;
  }

  void synchronize(const std::string&) override {
    if (Kokkos::is_initialized()) Kokkos::fence();
  }

  // bf16 is emulated (Bf16 storage, fp32 arithmetic). Views allocate and free directly: no cache to
  // empty; Kokkos::Experimental::Graph is not used (3.4's Serial space runs graph nodes eagerly).
  Capabilities capabilities(const std::string&) const override { return {Capability::Bf16}; }

  // Serial runs on one thread whatever was asked; an initialized OpenMP or Threads space says how
  // many it runs on (what Kokkos made of the request); a GPU space reports its own concurrency.
  // Kokkos sizes its OpenMP pool once, in Kokkos::initialize.
  bool threads_change_in_process() const override { return false; }

  int effective_threads(int requested) const override {
    if (device_is_gpu()) return requested;
    if (!host_space_takes_thread_count()) return 1;
    return Kokkos::is_initialized() ? ExecSpace().concurrency() : requested;
  }

  nlohmann::json metadata() const override {
    nlohmann::json info = {{"version", kokkos_version()},
                           {"origin", kokkos_origin},
                           {"execution_space", ExecSpace::name()},
                           {"memory_space", MemSpace::name()},
                           {"host_execution_space", Kokkos::DefaultHostExecutionSpace::name()},
                           {"enabled_execution_spaces", enabled_execution_spaces()},
                           {"thread_count_applied", host_space_takes_thread_count()}};
    if (Kokkos::is_initialized()) {
      info["threads_requested"] = threads_requested_;
      info["concurrency"] = ExecSpace().concurrency();
      std::ostringstream configuration;
      Kokkos::print_configuration(configuration, false);
      info["configuration"] = configuration.str();
    }
    return info;
  }

  void start_counting() override {
    callbacks_before_counting = tools::get_callbacks();
    tools::set_begin_parallel_for_callback(count_parallel_for);
    tools::set_begin_parallel_reduce_callback(count_parallel_reduce);
    tools::set_begin_parallel_scan_callback(count_parallel_scan);
    tools::set_allocate_data_callback(count_allocation);
    tools::set_deallocate_data_callback(count_deallocation);
    tools::set_begin_deep_copy_callback(count_deep_copy);
  }

  void stop_counting() override { tools::set_callbacks(callbacks_before_counting); }

 private:
  // The host threads the kernels run on: Kokkos' own count once initialized; before (as in
  // `phasebench list`), --threads and its default (all cores).
  std::string threads_text() const {
    if (device_is_gpu()) return "";
    if (!host_space_takes_thread_count()) return " (1 thread)";
    if (Kokkos::is_initialized()) return " (" + std::to_string(ExecSpace().concurrency()) + " threads)";
    return " (--threads threads, default " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + ")";
  }

  int threads_requested_ = 0;
  bool initialized_here_ = false;
};

const BackendRegistration registration{std::make_shared<KokkosBackend>()};

}  // namespace
}  // namespace pb::kokkos_backend
