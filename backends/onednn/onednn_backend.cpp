// oneDNN backend: one CPU engine and one in-order stream per process, OpenMP threads set at
// init, counters fed by the helpers declared in onednn_backend.hpp.

#include "backends/onednn/onednn_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "phasebench/backend.hpp"
#include "phasebench/counters.hpp"

namespace pb::onednn_backend {
namespace {

struct Runtime {
  dnnl::engine engine;
  dnnl::stream stream;
  int threads = 1;
};

// Set by init(), cleared by finalize(); variants only exist in between.
std::optional<Runtime>& runtime() {
  static std::optional<Runtime> instance;
  return instance;
}

Runtime& require_runtime() {
  if (!runtime()) {
    throw std::logic_error("oneDNN backend used before init() or after finalize()");
  }
  return *runtime();
}

std::string runtime_name(unsigned runtime_kind) {
  switch (runtime_kind) {
    case DNNL_RUNTIME_NONE: return "none";
    case DNNL_RUNTIME_SEQ: return "sequential";
    case DNNL_RUNTIME_OMP: return "OpenMP";
    case DNNL_RUNTIME_TBB: return "TBB";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    case DNNL_RUNTIME_OCL: return "OpenCL";
    case DNNL_RUNTIME_SYCL: return "SYCL";
    default: return "unknown (" + std::to_string(runtime_kind) + ")";
  }
}

// Only names present in both oneDNN 2.x and 3.x; anything else is printed as its number.
std::string isa_name(dnnl::cpu_isa isa) {
  using dnnl::cpu_isa;
  const std::pair<cpu_isa, const char*> names[] = {
      {cpu_isa::sse41, "sse41"},
      {cpu_isa::avx, "avx"},
      {cpu_isa::avx2, "avx2"},
      {cpu_isa::avx2_vnni, "avx2_vnni"},
      {cpu_isa::avx512_core, "avx512_core"},
      {cpu_isa::avx512_core_vnni, "avx512_core_vnni"},
      {cpu_isa::avx512_core_bf16, "avx512_core_bf16"},
      {cpu_isa::avx512_core_amx, "avx512_core_amx"},
  };
  for (const auto& [value, name] : names) {
    if (value == isa) return name;
  }
  std::ostringstream text;
  text << "isa 0x" << std::hex << static_cast<unsigned>(isa);
  return text.str();
}

std::string version_string() {
  const dnnl_version_t* version = dnnl_version();
  return std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
         std::to_string(version->patch);
}

class OnednnBackend final : public Backend {
 public:
  std::string name() const override { return "onednn"; }

  std::string unavailable_reason() const override {
    try {
      if (dnnl::engine::get_count(dnnl::engine::kind::cpu) == 0) {
        return "oneDNN reports no CPU engine";
      }
    } catch (const dnnl::error& error) {
      return std::string("oneDNN cannot enumerate CPU engines: ") + error.what();
    }
    return {};
  }

  std::vector<DeviceInfo> devices() const override {
    DeviceInfo cpu;
    cpu.name = "cpu";
    cpu.is_gpu = false;
    cpu.unavailable_reason = unavailable_reason();
    cpu.description = "oneDNN " + version_string() + " CPU engine, ISA " +
                      isa_name(dnnl::get_effective_cpu_isa()) + ", " +
                      runtime_name(dnnl_version()->cpu_runtime) + " runtime";
    return {cpu};
  }

  // oneDNN's OpenMP runtime sizes its parallel regions from omp_get_max_threads(), so the thread
  // count is the OpenMP one (LibTorch, when loaded, may have set it to 1 for the whole process).
  void init(const RuntimeOptions& options) override {
    const int threads = std::max(1, options.threads);
    omp_set_num_threads(threads);
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    runtime() = Runtime{engine, stream, threads};
  }

  void finalize() override { runtime().reset(); }

  // bf16 primitives (native where the ISA has it, else oneDNN's emulation). The CPU engine
  // allocates plain host memory (no cache to empty) and has no graph capture.
  Capabilities capabilities(const std::string&) const override { return {Capability::Bf16}; }

  void synchronize(const std::string& device) override {
    (void)device;  // one device
    if (runtime()) runtime()->stream.wait();
  }

  nlohmann::json metadata() const override {
    const dnnl_version_t* version = dnnl_version();
    return {
        {"version", version_string()},
        {"major", version->major},
        {"minor", version->minor},
        {"patch", version->patch},
        {"hash", version->hash ? version->hash : ""},
        {"cpu_runtime", runtime_name(version->cpu_runtime)},
        {"gpu_runtime", runtime_name(version->gpu_runtime)},
        {"max_cpu_isa", isa_name(dnnl::get_effective_cpu_isa())},
        {"threads", runtime() ? runtime()->threads : 0},
        {"omp_max_threads", omp_get_max_threads()},
        {"scratchpad_mode", "user"},
    };
  }

  // Counting needs no hooks: the helpers below call pb::counters directly, which only counts
  // inside the harness's CountingScope (one branch per call otherwise).
};

const BackendRegistration registration{std::make_shared<OnednnBackend>()};

}  // namespace

const dnnl::engine& engine() { return require_runtime().engine; }

dnnl::stream& stream() { return require_runtime().stream; }

dnnl::memory allocate(const dnnl::memory::desc& desc) {
  dnnl::memory memory(desc, engine());
  pb::counters::note_allocation(static_cast<int64_t>(desc.get_size()));
  return memory;
}

void note_dispatched_op() { pb::counters::note_ops(1); }

void execute(const dnnl::primitive& primitive, const Args& args) {
  pb::counters::note_ops(1);
  primitive.execute(stream(), args);
}

void execute(const dnnl::primitive& primitive, const std::vector<dnnl_exec_arg_t>& args) {
  pb::counters::note_ops(1);
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream().get(),
                                                 static_cast<int>(args.size()), args.data()),
                          "could not execute a primitive");
}

void read_floats_to_host(const dnnl::memory& memory, float* destination, size_t count) {
  if (count * sizeof(float) > memory.get_desc().get_size()) {
    throw std::out_of_range("read_floats_to_host: more floats asked for than the memory holds");
  }
  stream().wait();
  pb::counters::note_host_sync(1);
  const float* mapped = memory.map_data<float>();
  std::memcpy(destination, mapped, count * sizeof(float));
  memory.unmap_data(const_cast<float*>(mapped));
}

std::vector<float> read_floats_to_host(const dnnl::memory& memory) {
  std::vector<float> values(memory.get_desc().get_size() / sizeof(float));
  read_floats_to_host(memory, values.data(), values.size());
  return values;
}

void write_floats(const dnnl::memory& memory, const std::vector<float>& values) {
  if (values.size() * sizeof(float) != memory.get_desc().get_size()) {
    throw std::invalid_argument("write_floats: value count does not match the memory size");
  }
  stream().wait();  // never overwrite memory a queued primitive may still read
  float* mapped = memory.map_data<float>();
  std::memcpy(mapped, values.data(), values.size() * sizeof(float));
  memory.unmap_data(mapped);
}

void fill_floats(const dnnl::memory& memory, float value) {
  write_floats(memory, std::vector<float>(memory.get_desc().get_size() / sizeof(float), value));
}

std::optional<pb::CannotRun> cannot_run_on(const std::string& device) {
  if (device == "cpu") return std::nullopt;
  return pb::CannotRun{pb::CannotRun::Kind::Unsupported, "the oneDNN variants use the CPU engine only"};
}

Execution::Execution(const dnnl::primitive_desc_base& pd, const Args& args)
    : primitive_(pd.get()) {
  Args all = args;
  const dnnl::memory::desc scratchpad = pd.scratchpad_desc();
  if (scratchpad.get_size() > 0) all.emplace(DNNL_ARG_SCRATCHPAD, allocate(scratchpad));
  for (const auto& [arg, memory] : all) {
    memories_.push_back(memory);
    c_args_.push_back({arg, memory.get()});
  }
}

}  // namespace pb::onednn_backend
