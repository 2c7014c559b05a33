// The "cuda" backend: one device, "cuda" (device 0), used through the CUDA runtime API.
//
// Availability is whatever cudaGetDeviceCount says, asked once: any error (no driver, driver too
// old, no device node) means "no device", and the runtime's own error text becomes the reason
// every cuda row is SKIPPED with. Nothing else here touches the device unless it is available.
// Counting needs no hooks to attach: every launch, cudaMalloc and device-to-host read of a variant
// goes through the helpers below, which feed pb::counters (they count only inside a
// CountingScope, so timed runs pay one relaxed atomic load per call).

#include "cuda_backend.hpp"

#include <stdexcept>

#include "device_probe.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/counters.hpp"

#ifndef PHASEBENCH_CUDA_ARCHITECTURES
#define PHASEBENCH_CUDA_ARCHITECTURES "unknown"
#endif
#ifndef PHASEBENCH_CUDA_COMPILER
#define PHASEBENCH_CUDA_COMPILER "unknown"
#endif

namespace pb::cuda_backend {

namespace {

std::string error_text(cudaError_t status) {
  return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

std::string ask_runtime_for_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // reset the last-error slot: this error is reported, not carried on
    return "cudaGetDeviceCount: " + error_text(status);
  }
  if (count == 0) return "no CUDA device";
  return {};
}

}  // namespace

const std::string& device_unavailable_reason() {
  static const std::string reason = ask_runtime_for_device();
  return reason;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + error_text(status));
}

LaunchShape one_thread_per_row(int64_t rows, unsigned block) {
  const int64_t blocks = (rows + block - 1) / block;
  return {static_cast<unsigned>(blocks > 0 ? blocks : 1), block};
}

void launch_kernel_on(cudaStream_t stream, std::size_t shared_bytes, const void* kernel,
                      LaunchShape shape, void** arguments, const char* name) {
  check(cudaLaunchKernel(kernel, dim3(shape.grid), dim3(shape.block), arguments, shared_bytes,
                         stream),
        name);
  counters::note_ops(1);
}

void launch_kernel(const void* kernel, LaunchShape shape, void** arguments, const char* name) {
  // Default stream: every launch and copy of a variant is ordered, as in the original code.
  launch_kernel_on(nullptr, 0, kernel, shape, arguments, name);
}

Stream::Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);  // queued work still completes
}

void* device_allocate_bytes(std::size_t bytes) {
  void* pointer = nullptr;
  check(cudaMalloc(&pointer, bytes), "cudaMalloc");
  counters::note_allocation(static_cast<int64_t>(bytes));
  return pointer;
}

void device_free_bytes(void* pointer) noexcept {
  if (pointer != nullptr) cudaFree(pointer);  // errors here (device lost) cannot be acted on
}

void* device_allocate_async(std::size_t bytes, cudaStream_t stream) {
  void* pointer = nullptr;
  check(cudaMallocAsync(&pointer, bytes, stream), "cudaMallocAsync");
  counters::note_allocation(static_cast<int64_t>(bytes));
  return pointer;
}

void device_free_async(void* pointer, cudaStream_t stream) noexcept {
  if (pointer != nullptr) cudaFreeAsync(pointer, stream);
}

void* pinned_allocate_bytes(std::size_t bytes) {
  void* pointer = nullptr;
  check(cudaMallocHost(&pointer, bytes), "cudaMallocHost");
  return pointer;
}

void pinned_free_bytes(void* pointer) noexcept {
  if (pointer != nullptr) cudaFreeHost(pointer);
}

void copy_to_device(void* device_destination, const void* host_source, std::size_t bytes) {
  check(cudaMemcpy(device_destination, host_source, bytes, cudaMemcpyHostToDevice),
        "cudaMemcpy host to device");
}

void read_to_host(void* host_destination, const void* device_source, std::size_t bytes) {
  // A pageable-memory cudaMemcpy returns only after the copy, hence after all earlier work on
  // the default stream: the host waits here.
  check(cudaMemcpy(host_destination, device_source, bytes, cudaMemcpyDeviceToHost),
        "cudaMemcpy device to host");
  counters::note_host_sync();
}

void fill_with_nan(void* device_pointer, std::size_t bytes) {
  check(cudaMemset(device_pointer, 0xFF, bytes), "cudaMemset");
}

void copy_on(cudaStream_t stream, void* device_destination, const void* device_source,
             std::size_t bytes) {
  check(cudaMemcpyAsync(device_destination, device_source, bytes, cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync device to device");
  counters::note_ops(1);
}

void zero_on(cudaStream_t stream, void* device_destination, std::size_t bytes) {
  check(cudaMemsetAsync(device_destination, 0, bytes, stream), "cudaMemsetAsync");
  counters::note_ops(1);
}

void copy_to_host_on(cudaStream_t stream, void* host_destination, const void* device_source,
                     std::size_t bytes) {
  check(cudaMemcpyAsync(host_destination, device_source, bytes, cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync device to host");
  counters::note_ops(1);
}

void read_to_host_on(cudaStream_t stream, void* host_destination, const void* device_source,
                     std::size_t bytes) {
  check(cudaMemcpyAsync(host_destination, device_source, bytes, cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync device to host");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  counters::note_host_sync();
}

void wait_for(cudaStream_t stream) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  counters::note_host_sync();
}

void upload_on(cudaStream_t stream, void* device_destination, const void* host_source,
               std::size_t bytes) {
  check(cudaMemcpyAsync(device_destination, host_source, bytes, cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync host to device");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void download_on(cudaStream_t stream, void* host_destination, const void* device_source,
                 std::size_t bytes) {
  check(cudaMemcpyAsync(host_destination, device_source, bytes, cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync device to host");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

// ---- graphs ------------------------------------------------------------------------------------

Graph::~Graph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
}

std::string Graph::begin(cudaStream_t stream) {
  // Thread-local mode: only this thread's unsafe calls (a cudaMalloc, a legacy-stream sync)
  // invalidate the capture; other threads of the process are not affected.
  const cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (status == cudaSuccess) return {};
  cudaGetLastError();
  return "cudaStreamBeginCapture: " + error_text(status);
}

std::string Graph::end(cudaStream_t stream, const std::string& failure) {
  // End the capture whatever happened, so the stream leaves capture mode and stays usable.
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  std::string why = failure;
  if (why.empty() && ended != cudaSuccess) why = "cudaStreamEndCapture: " + error_text(ended);
  cudaGraphExec_t exec = nullptr;
  if (why.empty()) {
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    if (instantiated != cudaSuccess) why = "cudaGraphInstantiate: " + error_text(instantiated);
  }
  if (!why.empty()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // the failure is reported, not carried into the eager run
    return why;
  }
  graph_ = graph;
  exec_ = exec;
  return {};
}

void Graph::launch(cudaStream_t stream) const {
  check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
  counters::note_ops(1);
}

namespace {

std::string version_string(int version) {  // 13000 -> "13.0"
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) return -1;
  return value;
}

// Name, compute capability, clocks and memory of one device (clocks are attributes: CUDA 13
// removed them from cudaDeviceProp).
nlohmann::json describe_device(int device) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return {{"error", "unreadable"}};
  return {
      {"index", device},
      {"name", properties.name},
      {"compute_capability",
       std::to_string(properties.major) + "." + std::to_string(properties.minor)},
      {"multiprocessors", properties.multiProcessorCount},
      {"memory_bytes", properties.totalGlobalMem},
      {"memory_bus_width_bits", properties.memoryBusWidth},
      {"clock_khz", device_attribute(cudaDevAttrClockRate, device)},
      {"memory_clock_khz", device_attribute(cudaDevAttrMemoryClockRate, device)},
      {"l2_cache_bytes", properties.l2CacheSize},
  };
}

std::string runtime_and_driver() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);  // 0 without a driver
  return "CUDA runtime " + version_string(runtime) + ", driver " + version_string(driver);
}

// "NVIDIA A100-SXM4-40GB (sm_80, 108 SMs), CUDA runtime 13.0, driver 13.0"
std::string short_description(int device) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return runtime_and_driver();
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ", " + std::to_string(properties.multiProcessorCount) +
         " SMs), " + runtime_and_driver();
}

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  std::string unavailable_reason() const override { return device_unavailable_reason(); }

  std::vector<DeviceInfo> devices() const override {
    const std::string& reason = device_unavailable_reason();
    return {{"cuda", true, reason, reason.empty() ? short_description(0) : runtime_and_driver()}};
  }

  // Creates the context now, so the first measured run does not pay for it.
  void init(const RuntimeOptions&) override {
    if (!device_available()) return;
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaFree(nullptr), "creating the CUDA context");
  }

  // Launch graphs are the runtime's own; bf16 through cuBLAS/cuda_bf16. Memory is allocated
  // stream-ordered (cudaMallocAsync), with no cache for the code to empty.
  Capabilities capabilities(const std::string&) const override {
    return {Capability::GraphCapture, Capability::Bf16};
  }

  void synchronize(const std::string&) override {
    if (device_available()) check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  // The GPU's own roofline ceilings (device_probe.hpp): device "cuda" is device 0.
  DeviceIdentity device_ceilings_identity(const std::string& device) const override {
    if (device != "cuda") return Backend::device_ceilings_identity(device);
    return probe::identify_device();
  }

  DeviceProbe measure_device_ceilings(const std::string& device) override {
    if (device != "cuda") return Backend::measure_device_ceilings(device);
    return probe::measure_ceilings();
  }

  nlohmann::json metadata() const override {
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);  // 0 without a driver
    nlohmann::json meta = {
        {"runtime_version", version_string(runtime)},
        {"driver_version", version_string(driver)},
        {"compiled_architectures", PHASEBENCH_CUDA_ARCHITECTURES},
        {"compiler", PHASEBENCH_CUDA_COMPILER},
        {"unavailable_reason", device_unavailable_reason()},
        {"devices", nlohmann::json::array()},
    };
    if (device_available()) {
      int count = 0;
      cudaGetDeviceCount(&count);
      for (int device = 0; device < count; ++device)
        meta["devices"].push_back(describe_device(device));
      meta["device_used"] = 0;
    }
    return meta;
  }
};

const BackendRegistration registration{std::make_shared<CudaBackend>()};

}  // namespace
}  // namespace pb::cuda_backend
