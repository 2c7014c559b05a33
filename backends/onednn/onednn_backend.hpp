#pragma once
// oneDNN backend runtime shared by the oneDNN variants (optimized/*/*-onednn.cpp).
//
// The backend owns one CPU engine and one in-order stream for the whole process; variants build
// their primitives against them in setup() and run them in run(). Everything a variant does to
// the runtime goes through the helpers below, because they are where the counters are fed:
//   execute() / Execution  -> one dispatched op per primitive execution,
//   allocate()             -> bytes allocated (counted only inside the counted iteration),
//   read_floats_to_host()  -> one host sync (stream wait + copy),
//   run_host_kernel()      -> one dispatched op (plain C++ where no primitive fits; no sync).
// The toolkit built on them: primitives.hpp (primitive descriptors of oneDNN 2.x and 3.x, post-ops,
// one-line executions), memory.hpp (descriptors, views, uploads, renewable storage), program.hpp
// (work bound in setup and played by run()).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "phasebench/variant.hpp"

namespace pb::onednn_backend {

using Args = std::unordered_map<int, dnnl::memory>;

/// The process-wide CPU engine (kind cpu, index 0). Valid between the backend's init() and
/// finalize(); throws std::logic_error outside that window.
const dnnl::engine& engine();
/// The in-order stream on engine() that every variant executes on.
dnnl::stream& stream();

/// A new memory of `desc` on engine(). Its bytes are noted as allocated (pb::counters), which
/// only counts when called inside the counted run().
dnnl::memory allocate(const dnnl::memory::desc& desc);

/// Counts one dispatched op (pb::counters); for work dispatched without execute().
void note_dispatched_op();

/// Runs `primitive` on stream() with `args`: one dispatched op. Does not wait.
void execute(const dnnl::primitive& primitive, const Args& args);
/// The same with arguments already in oneDNN's C form (no per-call map or vector).
void execute(const dnnl::primitive& primitive, const std::vector<dnnl_exec_arg_t>& args);

/// Waits for stream(), then copies the `count` floats of `memory` to `destination`: one host
/// sync. Allocates nothing on the host, so it can sit inside run().
void read_floats_to_host(const dnnl::memory& memory, float* destination, size_t count);
/// The same into a new vector (for outputs(), which is not timed).
std::vector<float> read_floats_to_host(const dnnl::memory& memory);

/// Copies `values` into `memory` (setup and poisoning: not a device read, not counted).
void write_floats(const dnnl::memory& memory, const std::vector<float>& values);
/// Fills `memory` with `value` (e.g. NaN to poison an output).
void fill_floats(const dnnl::memory& memory, float value);

/// The host address of a memory of engine(): on a CPU engine a memory handle is a host pointer.
/// Only for host kernels (below), setup and outputs; never to read a result inside run().
inline float* host_floats(const dnnl::memory& memory) {
  return static_cast<float*>(memory.get_data_handle());
}

/// Runs `kernel`, plain C++ over memories of engine(), as one dispatched op in stream order: the
/// CPU engine's stand-in for a custom device kernel where no primitive fits (oneDNN has no user
/// kernels on the CPU engine). The kernel reads and writes device memory on the device side and
/// returns nothing to the host code, so it is not a host sync. The wait only orders it after the
/// queued primitives (with the OpenMP runtime they have finished already: an in-order stream).
template <typename Kernel>
void run_host_kernel(Kernel&& kernel) {
  note_dispatched_op();
  stream().wait();
  kernel();
}

/// Why a oneDNN variant cannot run on `device`, if it cannot: the variants use the CPU engine only.
std::optional<pb::CannotRun> cannot_run_on(const std::string& device);

/// One primitive execution prepared in setup(): the primitive, its scratchpad and its arguments.
/// Primitives are created in user scratchpad mode (see the *_pd() helpers of primitives.hpp) so
/// that no allocation hides inside execution; the scratchpad is allocated here, once. Arguments are converted to
/// oneDNN's C form once too, so operator() builds no std::unordered_map per call: the harness
/// counts host heap bytes in run(), and at small sizes per-call bookkeeping shows in the time.
class Execution {
 public:
  /// Any primitive descriptor, reorders included (theirs is not a dnnl::primitive_desc).
  Execution(const dnnl::primitive_desc_base& pd, const Args& args);
  /// Executes on stream() through execute(): one dispatched op. Does not wait.
  void operator()() const { execute(primitive_, c_args_); }

 private:
  dnnl::primitive primitive_;
  std::vector<dnnl::memory> memories_;  // owns what c_args_ points at, scratchpad included
  std::vector<dnnl_exec_arg_t> c_args_;
};

}  // namespace pb::onednn_backend
