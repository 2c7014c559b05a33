// The LibTorch backend: devices, thread pools, synchronization, metadata and the counting hooks.
//
// Counting, attached only between start_counting() and stop_counting():
// - ops: a global RecordFunction callback (scope FUNCTION) counts each ATen op dispatched at the
//   top level of the counting thread. Ops that other ops call internally (mean -> sum, item ->
//   _local_scalar_dense) run at depth > 0 and are not counted again.
// - host syncs: every aten::_local_scalar_dense, at any depth, is one; it is what .item() (and
//   any op that reads a device value on the host) dispatches. read_to_host() counts its own.
// - bytes: a memory reporter pushed as the thread's PROFILER_STATE debug info, which the CPU
//   and CUDA allocators call for every allocation on that thread (what the autograd profiler's
//   profile_memory uses).

#include "backends/torch/torch_backend.hpp"

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string_view>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Logging.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "phasebench/backend.hpp"
#include "phasebench/counters.hpp"

// CUDA graphs and the caching allocator's cleanup need LibTorch's CUDA headers and libtorch_cuda.
// PHASEBENCH_TORCH_CUDA is defined by backends/torch/CMakeLists.txt when the LibTorch found has
// CUDA. Debian's CPU-only LibTorch ships ATen/cuda/CUDAGraph.h but neither the CUDA runtime
// headers it includes nor libtorch_cuda, so the header alone is no proof: both are required.
// Not compiled or run on the development machine (CPU-only LibTorch 1.13, no GPU).
#if defined(PHASEBENCH_TORCH_CUDA) && __has_include(<ATen/cuda/CUDAGraph.h>)
#define PHASEBENCH_TORCH_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace pb::torch_backend {
namespace {

// ---- op and host-sync counting ------------------------------------------------------------------

// Only the thread that called start_counting() counts: the variant's own code runs there, so
// whatever ATen runs on pool threads is inside one of its ops and must not be counted twice.
thread_local bool counting_thread = false;
thread_local int op_depth = 0;

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& op) {
  if (!counting_thread) return nullptr;
  if (op_depth++ == 0) counters::note_ops();
  if (std::string_view(op.name()) == "aten::_local_scalar_dense") counters::note_host_sync();
  return nullptr;
}

void on_op_end(const at::RecordFunction&, at::ObserverContext*) {
  if (counting_thread) --op_depth;
}

// ---- allocation counting ------------------------------------------------------------------------

// reportMemoryUsage() passes its two totals as int64_t in LibTorch 1.x and as size_t in 2.x:
// take the type from the declaration so one source compiles against both.
template <typename Method>
struct TotalsOf;
template <typename Class, typename Total>
struct TotalsOf<void (Class::*)(void*, int64_t, Total, Total, c10::Device)> {
  using type = Total;
};
using AllocatorTotal = TotalsOf<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::type;

class AllocationCounter final : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void*, int64_t bytes, AllocatorTotal, AllocatorTotal,
                         c10::Device) override {
    if (bytes > 0) counters::note_allocation(bytes);
    if (bytes < 0) counters::note_release(-bytes);  // negative sizes are frees
  }
  bool memoryProfilingEnabled() const override { return true; }
};

// ---- devices ------------------------------------------------------------------------------------

bool built_with_cuda() {
  // libc10_cuda registers the CUDA device guard when it loads; a CPU-only LibTorch has none.
  return c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA);
}

std::string cuda_unavailable_reason() {
  if (!built_with_cuda()) return "LibTorch " TORCH_VERSION " was built without CUDA";
  if (!torch::cuda::is_available()) {
    return "no CUDA device: LibTorch " TORCH_VERSION " has CUDA but sees no GPU (or no driver)";
  }
  return {};
}

// ---- metadata -----------------------------------------------------------------------------------

// "KEY=value" from at::show_config()'s comma-separated build settings; empty when absent.
std::string build_setting(const std::string& config, const std::string& key) {
  const std::string prefix = key + "=";
  const size_t start = config.find(prefix);
  if (start == std::string::npos) return {};
  const size_t value = start + prefix.size();
  return config.substr(value, config.find_first_of(",\n", value) - value);
}

// The BLAS libraries actually mapped into this process: a LibTorch built against the generic
// BLAS interface gets whatever the system provides (Debian: reference BLAS or OpenBLAS).
nlohmann::json loaded_blas_libraries() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> found;
  std::string line;
  while (std::getline(maps, line)) {
    const size_t path = line.find('/');
    if (path == std::string::npos) continue;
    const std::string file = line.substr(path);
    const std::string base = file.substr(file.rfind('/') + 1);
    if (base.find("blas") != std::string::npos || base.find("mkl") != std::string::npos) {
      found.insert(file);
    }
  }
  return nlohmann::json(std::vector<std::string>(found.begin(), found.end()));
}

// While counting, the CPU allocator looks up the size of every block freed, and logs a warning
// ("Memory block of unknown size was allocated before the profiling started") the first time a
// block allocated before counting is freed, which every variant that rebinds its outputs does.
// The bytes we count are allocations only, so the warning is noise: silence the library's
// warnings for the counted iteration. LibTorch logs through glog where it was built with it
// (Debian's), and through c10's own logger otherwise (PyTorch wheels), whose threshold is
// FLAGS_caffe2_log_level; both number warning 1 and error 2.
class QuietLibraryWarnings {
 public:
  QuietLibraryWarnings() {
#ifdef C10_USE_GLOG
    saved_ = FLAGS_minloglevel;
    FLAGS_minloglevel = std::max(saved_, 2);
#else
    saved_ = FLAGS_caffe2_log_level;
    FLAGS_caffe2_log_level = std::max(saved_, 2);
#endif
  }
  ~QuietLibraryWarnings() {
#ifdef C10_USE_GLOG
    FLAGS_minloglevel = saved_;
#else
    FLAGS_caffe2_log_level = saved_;
#endif
  }
  QuietLibraryWarnings(const QuietLibraryWarnings&) = delete;
  QuietLibraryWarnings& operator=(const QuietLibraryWarnings&) = delete;

 private:
  int saved_ = 0;
};

// ---- fp32 math --------------------------------------------------------------------------------

// PyTorch lets cuDNN compute fp32 convolutions in TF32 by default (and cuBLAS fp32 matmuls where
// float32_matmul_precision allows) on Ampere and later GPUs: a 10-bit mantissa, so an exact phase
// would not compute what it claims (on an H200 the spinlock rollouts' exact phases fail their fp32
// budgets in TF32: docs/spinlock.md). Every torch phase here computes in fp32; TF32 is an
// approximation a ladder would have to declare as a phase of its own. The legacy setters exist
// from LibTorch 1.7 to 2.x and keep the newer per-backend precision settings consistent.
void compute_fp32_in_fp32() {
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
}

std::string matmul_precision_name(at::Float32MatmulPrecision precision) {
  switch (precision) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
  }
  return "unknown";
}

class TorchBackend final : public Backend {
 public:
  std::string name() const override { return "torch"; }

  std::vector<DeviceInfo> devices() const override {
    DeviceInfo cpu{"cpu", false, "", "host CPU through ATen"};
    DeviceInfo cuda{"cuda", true, cuda_unavailable_reason(), ""};
    if (cuda.unavailable_reason.empty()) {
      cuda.description = "CUDA device 0 of " + std::to_string(torch::cuda::device_count());
    }
    return {cpu, cuda};
  }

  void init(const RuntimeOptions& options) override {
    compute_fp32_in_fp32();
    const int threads = std::max(1, options.threads);
    // LibTorch leaves the process at one OpenMP thread: size the intra-op pool explicitly.
    at::set_num_threads(threads);
    // The inter-op pool can be sized only before its first use; a later init keeps the first.
    try {
      at::set_num_interop_threads(threads);
    } catch (const c10::Error&) {
    }
  }

  // The intra-op pool follows each case's count; resizing it also rebuilds LibTorch's pthreadpool,
  // so an unchanged count is left alone.
  void use_threads(int threads) override {
    if (at::get_num_threads() != threads) at::set_num_threads(std::max(1, threads));
  }

  // CUDA adds its caching allocator and, when this LibTorch has them, CUDA graphs.
  Capabilities capabilities(const std::string& device) const override {
    Capabilities has{Capability::Bf16, Capability::Autograd};
    if (device != "cuda") return has;
    has.insert(Capability::CachingAllocator);
#ifdef PHASEBENCH_TORCH_CUDA_GRAPHS
    has.insert(Capability::GraphCapture);
#endif
    return has;
  }

  void synchronize(const std::string& device) override {
    if (device == "cuda" && torch::cuda::is_available()) torch::cuda::synchronize();
  }

  // Also asked of a process that never calls init() (the run's supervisor writes machine.json):
  // the fp32 settings are applied first, so that what is recorded is what every worker uses.
  nlohmann::json metadata() const override {
    compute_fp32_in_fp32();
    const std::string config = at::show_config();
    return {
        {"library", "LibTorch"},
        {"version", TORCH_VERSION},
        {"threads", at::get_num_threads()},
        {"interop_threads", at::get_num_interop_threads()},
        {"parallel_info", at::get_parallel_info()},
        {"blas_build", build_setting(config, "BLAS_INFO")},
        {"lapack_build", build_setting(config, "LAPACK_INFO")},
        {"blas_loaded", loaded_blas_libraries()},
        {"cuda_built", built_with_cuda()},
        {"cuda_available", torch::cuda::is_available()},
        {"cuda_device_count", torch::cuda::device_count()},
        {"allow_tf32_cudnn", at::globalContext().allowTF32CuDNN()},
        {"allow_tf32_cublas", at::globalContext().allowTF32CuBLAS()},
        {"float32_matmul_precision", matmul_precision_name(at::globalContext().float32MatmulPrecision())},
        {"show_config", config},
    };
  }

  void start_counting() override {
    counting_thread = true;
    op_depth = 0;
    op_callback_ = at::addGlobalCallback(
        at::RecordFunctionCallback(&on_op_start, &on_op_end).scopes({at::RecordScope::FUNCTION}));
    quiet_warnings_ = std::make_unique<QuietLibraryWarnings>();
    allocation_reporting_ = std::make_unique<c10::DebugInfoGuard>(
        c10::DebugInfoKind::PROFILER_STATE, std::make_shared<AllocationCounter>());
  }

  void stop_counting() override {
    allocation_reporting_.reset();
    quiet_warnings_.reset();
    if (op_callback_ != 0) at::removeCallback(op_callback_);
    op_callback_ = 0;
    counting_thread = false;
  }

 private:
  at::CallbackHandle op_callback_ = 0;
  std::unique_ptr<c10::DebugInfoGuard> allocation_reporting_;
  std::unique_ptr<QuietLibraryWarnings> quiet_warnings_;
};

const BackendRegistration registration{std::make_shared<TorchBackend>()};

}  // namespace

// ---- helpers for variants -----------------------------------------------------------------------

torch::Device device_for(const std::string& device) {
  if (device == "cpu") return torch::Device(torch::kCPU);
  if (device == "cuda") return torch::Device(torch::kCUDA, 0);
  throw std::invalid_argument("the torch backend has no device '" + device +
                              "' (it knows cpu and cuda)");
}

std::string device_unavailable_reason(const std::string& device) {
  if (device == "cpu") return {};
  if (device == "cuda") return cuda_unavailable_reason();
  return "the torch backend has no device '" + device + "'";
}

std::optional<CannotRun> cannot_run_on(const std::string& device) {
  if (device != "cpu" && device != "cuda") {
    return CannotRun{CannotRun::Kind::Unsupported, device_unavailable_reason(device)};
  }
  std::string reason = device_unavailable_reason(device);
  if (reason.empty()) return std::nullopt;
  return CannotRun{CannotRun::Kind::Skipped, std::move(reason)};
}

torch::Tensor to_tensor(const HostArray& array, const torch::Device& device) {
  std::vector<float> values = array.to_floats();
  // from_blob borrows `values`: clone so the tensor owns its storage before `values` goes.
  torch::Tensor host = torch::from_blob(values.data(), array.shape, torch::kFloat32).clone();
  return host.to(device);
}

HostArray to_host_array(const torch::Tensor& tensor) {
  const torch::Tensor host = tensor.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return HostArray::from_floats(host.sizes().vec(), host.data_ptr<float>(), host.numel());
}

torch::Tensor read_to_host(const torch::Tensor& tensor) {
  counters::note_host_sync();
  return tensor.to(torch::kCPU).contiguous();
}

// ---- CUDA-only machinery ------------------------------------------------------------------------

namespace {

/// True when `device` has a caching allocator whose cache can be emptied (LibTorch's CUDA device).
bool has_caching_allocator(const std::string& device) {
  return device == "cuda" && cuda_unavailable_reason().empty();
}

#ifdef PHASEBENCH_TORCH_CUDA_GRAPHS
// Device-wide memory use (cudaMemGetInfo: a driver query, it does not wait for the device). The
// allocator's own statistics would do too, but their types moved between LibTorch 1.x and 2.x.
double cuda_memory_used_fraction() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || total_bytes == 0) return 0;
  return 1.0 - static_cast<double>(free_bytes) / static_cast<double>(total_bytes);
}
#endif

}  // namespace

bool captures_cuda_graphs() {
#ifdef PHASEBENCH_TORCH_CUDA_GRAPHS
  return true;
#else
  return false;
#endif
}

AllocatorCleanup::AllocatorCleanup(const std::string& device, bool adaptive)
    : enabled_(has_caching_allocator(device)), adaptive_(adaptive) {}

void AllocatorCleanup::after_window() {
  if (!enabled_) return;
  ++windows_;
#ifdef PHASEBENCH_TORCH_CUDA_GRAPHS
  if (windows_ % (adaptive_ ? 50 : 10) != 0) return;
  if (adaptive_ && cuda_memory_used_fraction() <= 0.9) return;
  counters::note_host_sync();  // empty_cache synchronizes before it frees the cached blocks
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

#ifdef PHASEBENCH_TORCH_CUDA_GRAPHS
struct CudaGraph::Impl {
  at::cuda::CUDAGraph graph;
  bool captured = false;
};
#else
struct CudaGraph::Impl {
  bool captured = false;
};
#endif

CudaGraph::CudaGraph() = default;
CudaGraph::~CudaGraph() = default;

bool CudaGraph::captured() const { return impl_ && impl_->captured; }

std::string CudaGraph::capture(const std::function<void()>& body) {
  impl_.reset();
#ifdef PHASEBENCH_TORCH_CUDA_GRAPHS
  auto impl = std::make_unique<Impl>();
  torch::cuda::synchronize();  // the warm-up's work must not leak into the capture
  std::string failure;
  {
    // Capture cannot run on the legacy default stream: use a side stream for its duration.
    c10::cuda::CUDAStreamGuard side_stream(c10::cuda::getStreamFromPool());
    try {
      impl->graph.capture_begin();
    } catch (const std::exception& error) {
      return std::string("CUDA graph capture could not begin: ") + error.what();
    }
    try {
      body();
    } catch (const std::exception& error) {
      failure = error.what();
    }
    // End the capture even when the body failed, so the stream leaves capture mode.
    try {
      impl->graph.capture_end();
    } catch (const std::exception& error) {
      if (failure.empty()) failure = error.what();
    }
  }
  if (!failure.empty()) {
    (void)cudaGetLastError();  // clear the sticky capture error so eager work can go on
    return "CUDA graph capture failed: " + failure;
  }
  torch::cuda::synchronize();
  impl->captured = true;
  impl_ = std::move(impl);
  return {};
#else
  (void)body;
  return "phasebench was built against LibTorch " TORCH_VERSION " without CUDA (no at::cuda::CUDAGraph)";
#endif
}

void CudaGraph::replay() {
  if (!captured()) throw std::logic_error("CudaGraph::replay() before a successful capture()");
#ifdef PHASEBENCH_TORCH_CUDA_GRAPHS
  impl_->graph.replay();
#endif
}

}  // namespace pb::torch_backend
