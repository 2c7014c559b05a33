#pragma once
// trainer2's building blocks on LibTorch, written once for every torch variant of the suite: the
// LIoR step and its speed, the retrieval step (eager, or compiled with TorchScript), the rotor and
// its updates, the field step, and the window engine that runs run_window's steps with the
// optimizations a variant's plan has. lior_step, retrieval and rotor_update call the blocks alone;
// window and train_step drive the engine through a WindowDriver. Compiled once, in
// trainer2_engine-torch.cpp. Math: reference/trainer2/trainer2.hpp; the optimizations:
// suites/trainer2/phases.hpp and docs/trainer2.md.

#include <array>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/torch/torch_backend.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace torch::jit {
struct CompilationUnit;
}

namespace pb::torch_backend::trainer2 {

namespace ref = pb::reference::trainer2;

// ---- LIoR step --------------------------------------------------------------------------------

struct LiorStep {
  torch::Tensor dlior, s;  // [M] each
};

/// dlior = R s with s = sqrt(max(0, Σ_i g_i v_i²) + eps) per row of v [M,n]. Without
/// `fused_lior_spd` as the original: lior_step computes s inside and does not return it, so s is
/// computed again for the metrics; with it, s is computed once and returned with dlior.
LiorStep lior_step(const torch::Tensor& R, const torch::Tensor& v, const torch::Tensor& g, bool fused_lior_spd);

// ---- retrieval --------------------------------------------------------------------------------

struct RetrievalResult {
  torch::Tensor act, weights;  // [B,d], [B,K]
};

/// The retrieval step: u = cand - q; spd = sqrt(clamp_min((g u u).sum(-1), 0) + eps);
/// w = softmax(-beta R spd, -1); act = (w[..., None] * cand_state).sum(1). Op by op as the
/// original, or (jit_fusion) the same source compiled with torch::jit::compile, whose graph
/// executor fuses where the build has a fuser (CUDA). Debian's CPU LibTorch 1.13 has none (no
/// LLVM): there the optimized graph is the same aten ops, and the [B,K,d] product of the mixing is
/// still allocated.
class Retrieval {
 public:
  /// In setup(), untimed: with `compiled`, compiles the function and calls it a few times on zeros
  /// of these shapes, so that the graph executor's profiling and optimizing are done before the
  /// first run() is timed or counted.
  void prepare(bool compiled, int64_t B, int64_t K, int64_t d, const torch::TensorOptions& options);
  RetrievalResult operator()(const torch::Tensor& q, const torch::Tensor& cand_coord,
                             const torch::Tensor& cand_state, const torch::Tensor& g,
                             const torch::Tensor& R) const;

 private:
  std::shared_ptr<torch::jit::CompilationUnit> compiled_;  // null: eager
};

// ---- rotor ------------------------------------------------------------------------------------

/// Index tensors of the rotor (int64, on the device): per layer the coordinates (a, b) its
/// pairs rotate, and for the learnt pairs k < 6 the coordinates (i, j) and the slots k.
struct RotorIndex {
  std::vector<torch::Tensor> a, b;  // one [ppl] tensor per layer
  torch::Tensor pair_i, pair_j, learnt;  // [6] each
};
RotorIndex make_rotor_index(const torch::Device& device);

/// rotor_apply(x, θ) over the last axis (size n) of x, out of place, layer by layer.
torch::Tensor rotor_apply(const torch::Tensor& x, const torch::Tensor& theta, const RotorIndex& index);

/// The rotor update of the learnt pairs, then θ wrapped to [−π, π). `lior_diff` is a 0-dim device
/// tensor. Without `vectorized_rotor` as the original: per pair, i, j, u_i and u_j read back to
/// the host one at a time (4 host syncs per pair), one device op per updated angle. With it: u_i,
/// u_j gathered, atan2 and hypot for all pairs, small-r pairs masked with where(), one index_add,
/// no host reads. Returns the new θ.
torch::Tensor rotor_update(const torch::Tensor& u, const torch::Tensor& lior_diff, const torch::Tensor& theta,
                           const RotorIndex& index, bool vectorized_rotor);

/// g ← clamp(g + η Δ u_r² / (Σ u_r² + 1e-8), 0.01, 100), u_r = rotor_apply(u, θ).
torch::Tensor metric_update(const torch::Tensor& u, const torch::Tensor& theta,
                            const torch::Tensor& lior_diff, const torch::Tensor& g,
                            const RotorIndex& index);

// ---- the window engine ----------------------------------------------------------------------------

/// The optimizations of the window engine and its drivers, read once from a variant's plan.
struct WindowOptimizations {
  explicit WindowOptimizations(const VariantContext& context);

  bool batched_metrics;   // the three progress metrics stacked on the device, one read per step
  bool fused_lior_spd;    // s computed once, returned with dlior
  bool jit_fusion;        // the retrieval compiled with TorchScript
  bool adaptive_cleanup;  // the allocator cache emptied every 50 windows and only when > 90% full
  bool in_place;          // every buffer preallocated in setup(), in-place and out= ops, views made once
  bool graph_capture;     // the whole run captured once as a CUDA graph and replayed
  bool hoisted_batch;     // q, q_state, the candidates and the rotated query built once per window
  bool last_step_act;     // the retrieval only in the last step: nothing else reads act or weights
  bool deferred_metrics;  // the step metrics logged to a [W,3] device buffer, read once per window
};

/// The phases a window or train_step ladder registers: `phases`, less graph_capture where this
/// LibTorch cannot capture CUDA graphs (torch then has it on no device; the harness writes the row).
std::vector<std::string> registered_phases(std::vector<std::string> phases);

/// Device copies of a window's inputs, fixed during the window.
struct WindowInputs {
  torch::Tensor O, bank_coord, bank_state, g, theta;  // [B,T,d], [C,n], [C,d], [n], [8]
  torch::Tensor F0;                                   // [Nx,Ny,D,D,2]
};

/// The state a window advances: field and momentum [Nx,Ny,D,D,2], and the equilibrium F_eq = F0
/// (under in_place held pre-multiplied by the spring constant k: the in-place force adds k·F_eq
/// in the same op that scales F).
struct FieldState {
  torch::Tensor F, P, F_eq;
  // Under in_place the buffers stay where they are, so the views the steps use are made once (a
  // view is a dispatched op too): F as complex, the [Nx,Ny,channels] grids, and the four slices of
  // F that are the stencil's x+1, x−1, y+1, y−1 neighbours (zero padding: edge rows get no term).
  torch::Tensor F_complex, F_grid, P_grid, F_eq_grid;
  std::array<torch::Tensor, 4> F_neighbours;
};

/// One window's results on the device.
struct WindowOutputs {
  torch::Tensor totals;      // [3]: lior, R, spd (the accumulators / W)
  torch::Tensor act, vbar;   // [B,d] (last step's), [B,n]
  torch::Tensor path;        // [W, n+3]
  torch::Tensor q, q_state;  // [B,n], [B,d]: the retrieval query and state (memory update rows)
  torch::Tensor progress;    // [W,3]: the step metrics as logged on the device (deferred reads)
  // [W,3]: what the host read at each step (lior_acc, R_acc, spd_acc over t + 1 steps): the
  // original logs it, and phasebench checks it, so that a wrong read is caught.
  std::vector<float> host_progress;
};

/// Packs a window's outputs (and its final field) as HostArrays named with `prefix`.
void add_window_outputs(ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims,
                        const WindowOutputs& window, const FieldState& field);
/// Writes NaN into every output tensor of a window and its field.
void poison(WindowOutputs& window, FieldState& field);

/// run_window: W steps of curvature, retrieval batch, retrieval, LIoR step with the path row,
/// progress metrics and field step. Without in_place every step makes fresh tensors, as the
/// original; with it every buffer is made in setup() and the same steps run in place.
class WindowEngine {
 public:
  WindowEngine(const WindowOptimizations& optimizations, const ref::WindowDims& dims, const torch::Device& device);

  /// Keeps (references to) the inputs; under in_place allocates every buffer the steps reuse.
  void setup(const WindowInputs& inputs);
  /// Output and field buffers for one window (allocated whatever the plan, so poison works).
  WindowOutputs make_outputs() const;
  FieldState make_field() const;

  /// F = F0, P = 0, F_eq = F0: where every window of the workloads starts (part of the work).
  void reset_field(FieldState& field) const;
  /// One run_window from `field`: advanced in place under in_place, rebound to new tensors
  /// without. `nudge` [B,n] is undefined in the free phase.
  void run(FieldState& field, const torch::Tensor& nudge, WindowOutputs& out);

  /// While capturing a CUDA graph the host cannot read: the step metrics are logged to
  /// out.progress, and read_logged_metrics() delivers them after the replay.
  void set_capturing(bool capturing) { capturing_ = capturing; }
  /// The host reads of the logged metrics: one per step, or one per window (deferred_metrics).
  void read_logged_metrics(WindowOutputs& out);

  const RotorIndex& rotor_index() const { return rotor_index_; }

 private:
  struct Batch {
    torch::Tensor q, q_state, cand_coord, cand_state, q_rot;
  };

  // The steps of run(), each in its two forms: fresh tensors, or (in_place) preallocated buffers.
  void begin_window(WindowOutputs& out);
  void curvature(const FieldState& field);                    // 1: R
  void build_batch(const torch::Tensor& nudge);               // 2, 3: batch_
  void retrieve_act(WindowOutputs& out);                      // 4
  void lior_step_and_path(int64_t step, WindowOutputs& out);  // 5, 6, 7
  void report_progress(int64_t step, WindowOutputs& out);     // 8
  void field_step(FieldState& field);                         // 9
  void end_window(WindowOutputs& out);

  void allocate_buffers();
  void rotor_apply_in_place(const torch::Tensor& x);
  void force_in_place(const FieldState& field);  // into force_
  void log_or_read(int64_t step, const torch::Tensor& metrics, WindowOutputs& out);
  void read_metrics(const torch::Tensor& metrics, int64_t first_step, WindowOutputs& out);

  WindowOptimizations optimizations_;
  ref::WindowDims dims_;
  torch::Device device_;
  WindowInputs in_;
  RotorIndex rotor_index_;
  Retrieval retrieval_;
  bool capturing_ = false;

  // What the steps pass on: fresh every step without in_place, else made once in setup().
  Batch batch_;
  torch::Tensor R_;                          // [B]
  torch::Tensor lior_acc_, R_acc_, spd_acc_;  // 0-dim (in_place: the elements of accumulators_)
  torch::Tensor vel_acc_;                    // [B,n] (in_place: out.vbar until the window ends)

  // The in_place buffers, and views of them made once.
  torch::Tensor shifted_, rotor_cos_, rotor_sin_, rotor_xa_, rotor_xb_, rotor_t1_, rotor_t2_;
  torch::Tensor spring_, modulus_, modulus_real_, R_mean_, R_mean_as_batch_, vv_, s_, dlior_, s_mean_, metrics_;
  torch::Tensor accumulators_;                                      // [3]
  torch::Tensor row_, mean_v_, mean_R_, mean_dlior_, norm_mean_v_;  // a path row [n+3] and its parts
  torch::Tensor force_;                                             // [Nx,Ny,channels]
  std::array<torch::Tensor, 4> force_neighbour_terms_;              // the slices of force_ each neighbour adds to
};

/// What window and train_step share around the engine: the inputs on the device (and under
/// graph_capture the static copies a CUDA graph reads, refreshed before each replay), the engine,
/// the original's allocator cleanup after every window (adaptive under adaptive_cleanup), and the
/// CUDA graph of the variant's whole run() under graph_capture.
class WindowDriver {
 public:
  explicit WindowDriver(const VariantContext& context);

  std::optional<CannotRun> support() const { return cannot_run_on(device_); }
  /// Uploads the window inputs and sets the engine up on them.
  void setup(const ArrayMap& in);
  /// `input` itself, or under graph_capture a static copy refreshed from `input` before each replay.
  torch::Tensor graph_input(const torch::Tensor& input);
  /// The last of setup(): under graph_capture, `body` (the variant's run, all its device work on
  /// tensors that stay in place) run eagerly a few times, then captured with the engine's metric
  /// reads deferred. Where capture fails the failure is reported on stderr once and run() stays
  /// eager.
  void capture(const std::function<void()>& body);
  /// One run(): the graph replayed and the logged metrics of `windows` read, or `body` run
  /// eagerly; then the allocator cleanup after each window.
  void run(const std::function<void()>& body, std::initializer_list<WindowOutputs*> windows);

  const WindowOptimizations& optimizations() const { return optimizations_; }
  const ref::WindowDims& dims() const { return dims_; }
  torch::Device device() const { return device_for(device_); }
  /// What the body reads: the inputs, or their static copies under graph_capture.
  const WindowInputs& inputs() const { return graph_inputs_; }
  WindowEngine& engine() { return *engine_; }

 private:
  WindowOptimizations optimizations_;
  std::string device_;
  ref::WindowDims dims_{};
  WindowInputs graph_inputs_;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> refreshed_;  // (static copy, input)
  std::unique_ptr<WindowEngine> engine_;
  AllocatorCleanup cleanup_;
  CudaGraph graph_;
};

}  // namespace pb::torch_backend::trainer2
