#pragma once
// The trainer2 engine on oneDNN: the suite's building blocks, written once and used by every
// trainer2 oneDNN variant. The speed s and the LIoR step (lior_step, window, train_step), the
// retrieval (retrieval, window, train_step), the rotor and its update (rotor_update, train_step),
// the field (window, train_step) and one run_window (window, train_step). The math and its order
// of operations: reference/trainer2/trainer2.hpp and lior_step.hpp; the suite: docs/trainer2.md.
// Bodies: trainer2_engine-onednn.cpp.
//
// What runs how:
//  - oneDNN primitives for every array operation: eltwise, binary (with eltwise/binary
//    post-ops), reductions, softmax, matmul (the g-weighted squared distance as a product with
//    g as a column, the rotor as a product with its 8x8 matrix, means over a middle axis),
//    inner products (the state mixing, one gemv per batch row), reorders (copies, the
//    retrieval batch's concatenation, layout changes of the field) and one depthwise 3x3
//    convolution per force evaluation.
//  - host kernels (ob::run_host_kernel: plain C++ over the CPU engine's memory, one dispatched
//    op, no host sync) where no primitive exists: oneDNN has no cos/sin/atan2/fmod, so building
//    the rotor's 8x8 matrix from θ and the rotor update are host kernels.
//  - host reads (ob::read_floats_to_host: one host sync each): the progress metrics, and the
//    per-pair reads of i, j, u_i, u_j of the rotor update without vectorized_rotor.
//
// oneDNN 2.6 facts that shape the code (at the default size, one thread; docs/trainer2.md):
//  - a reduction over a middle axis (mean over T of O [B,T,d], sum over K of [B,K,d]) runs in
//    oneDNN's reference implementation. The same sums as products with a row of ones (a matmul
//    over T; one gemv per batch row over K) are orders of magnitude faster, so every sum over a
//    middle axis is written so.
//  - the depthwise convolution has a jit implementation (jit_dw, NHWC or blocked) with a sum
//    post-op followed by a binary one, but none with an eltwise post-op or with the binary
//    first (the reference one, orders of magnitude slower): see Field for what that costs.
//  - a binary with a strided operand runs in the reference implementation (several times slower
//    on [16,8]): the per-step arrays are dense.
//  - brgemm matmul applies a second eltwise_linear post-op of one chain with the first one's
//    alpha and beta (wrong results): see root_of_weighted_sum in the .cpp.
//
// Without inplace, every array a step produces gets fresh storage each step (StepBuffers), as an
// eager framework's ops return new tensors, and the accumulators are updated out of place
// (Accumulator); with inplace everything is allocated in setup() and updated in place.

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/onednn_backend.hpp"
#include "backends/onednn/primitives.hpp"
#include "backends/onednn/program.hpp"
#include "phasebench/arrays.hpp"
#include "phasebench/variant.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb::onednn_backend::trainer2 {

namespace ob = pb::onednn_backend;
namespace ref = pb::reference::trainer2;
using dnnl::memory;

constexpr int64_t kN = ref::kCoordinateDim;  // n
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- storage of a step ---------------------------------------------------------------------------

/// The arrays of one step; begin_step() renews them all when they are fresh each step (without
/// inplace), as an eager framework's ops return new tensors.
class StepBuffers {
 public:
  explicit StepBuffers(bool fresh_each_step) : fresh_(fresh_each_step) {}
  RenewableMemory& add(const memory::desc& desc) { return buffers_.emplace_back(desc); }
  memory make(const memory::desc& desc) { return add(desc).get(); }
  void begin_step() {
    if (!fresh_) return;
    for (RenewableMemory& buffer : buffers_) buffer.renew();
  }

 private:
  bool fresh_;
  std::deque<RenewableMemory> buffers_;  // stable addresses
};

/// A running sum. Out of place (without inplace: `acc = acc + x` into fresh storage, which then
/// becomes the accumulator) or in place (`acc += x`). An update writes target(), between
/// before_update() and after_update().
class Accumulator {
 public:
  Accumulator(const memory::desc& desc, bool in_place);
  const memory& value() const { return value_; }
  const memory& target() const { return next_; }
  void before_update();
  void after_update();

 private:
  memory::desc desc_;
  bool in_place_;
  memory storage_, next_storage_;
  memory value_, next_;
};

// ---- the rotor -----------------------------------------------------------------------------------

/// Host kernel: W [n,n] with row i = rotor_apply(e_i, θ), so that the row vector q·W is
/// rotor_apply(q, θ) (the rotor is linear). oneDNN has no cos/sin; the product is a matmul.
Program rotor_matrix(const memory& theta, const memory& matrix);

/// g = clip(g + ((η Δ) u_r) u_r / (Σ u_r² + 1e-8), 0.01, 100), u_r = u·W with W = rotor_matrix(θ),
/// in the reference's order: square, sum (+1e-8 post-op), η Δ, two muls, a division and an add with
/// a clip post-op. u [1,n], theta [8], lior_diff (Δ) [1,1], g [1,n] (updated) on the engine. Here,
/// not in train_step-onednn.cpp, so that a test runs it with Δ ≠ 0 (0 in train_step by construction).
Program metric_update(const memory& u, const memory& theta, const memory& lior_diff, const memory& g);

/// θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r for the learnt pairs with r = hypot(u_i, u_j) >= 1e-6,
/// then θ wrapped to [−π, π). u [1,n], lior_diff (Δ) [1,1], theta [8] on the engine.
///  pair by pair (as the original): each pair's i and j (from the pair table on the device) and
///    u_i, u_j are read back to the host one at a time (4 host syncs per pair); the update is a
///    host kernel with the host's atan2 and r as arguments (Δ stays on the device), and the wrap
///    one more host kernel (oneDNN has no fmod).
///  vectorized (vectorized_rotor): one host kernel gathers every pair, updates and wraps: no host
///    read.
class RotorUpdate {
 public:
  RotorUpdate(bool vectorized, const memory& u, const memory& lior_diff, const memory& theta);
  void operator()() const;

 private:
  void update_pair_by_pair() const;
  void update_all() const;

  bool vectorized_;
  memory u_, lior_diff_, theta_;
  memory pairs_;                                  // [6,2]: (i, j) of each learnt pair
  std::vector<memory> pair_entries_, u_entries_;  // [1,1] views of each entry
};

// ---- the speed s and the LIoR step (step 5) ------------------------------------------------------

/// How s = sqrt(max(0, Σ_i g_i v_i²) + eps) forms its quadratic form.
enum class QuadraticForm {
  WeightFirst,  // (g v) v: two binary muls, a sum over n, then max(0, .), + eps, sqrt: 6
                // primitives, each into an array of its own (the reference's order; the window's
                // and the retrieval's, whose eager phases renew every array each step)
  SquareFirst,  // v², then × g (an eltwise square and one broadcast binary), the same tail, with
                // the × g and the tail in place: 6 primitives and one scratch array (lior_step's
                // chain, in the order its fused form keeps)
  Fused,        // v², then one matmul with g as an [n,1] column whose post-ops finish s: 2
                // primitives (fused_quadratic_form, a phase of its own so that fused_lior_spd's
                // gain stays what the seed means by it: s computed once, nothing else)
};

/// s [..,1] from v [..,n] (rows of any rank) and g [1,n]; its arrays are added to `arrays`.
Program speed(const memory& v, const memory& g, const memory& s, StepBuffers& arrays,
              QuadraticForm form);

struct LiorStep {
  Program program;
  memory s;  // [rows,1]
};

/// The LIoR step on v [rows,n], g [1,n] and R [rows,1]: s, dlior = s R into `dlior`, and the
/// metrics' s into `metrics_s`: with `speed_once` (fused_lior_spd) s is computed once, straight
/// into metrics_s; otherwise into an array of its own, and once more after dlior for the metrics,
/// as the original does.
LiorStep lior_step(const memory& v, const memory& g, const memory& R, const memory& dlior,
                   const memory& metrics_s, bool speed_once, QuadraticForm form,
                   StepBuffers& arrays);

// ---- the retrieval (step 4) ----------------------------------------------------------------------

struct Retrieval {
  Program program;
  memory weights;  // [B,K]
  memory act;      // [B,1,d]
};

/// The retrieval on query [B,1,n], cand_coord [B,K,n], cand_state [B,K,d], g [1,n] and
/// R [B,1,1] (views the caller keeps valid); its arrays are added to `arrays`.
///  op by op (as the original): u = cand − q; the speed of u (WeightFirst); R spd; −β cost;
///    softmax over K; w cand_state; sum over K (a row of ones times each batch's products: see
///    the top). 11 primitives + B gemvs; cand_state read once, and a [B,K,d] product written and
///    read.
///  fused (jit_fusion): (cand − q)² as one binary with a square post-op; the g-weighted sum over
///    n as a matmul with g as an [n,1] column whose post-ops finish the logits (max(0, .), + eps,
///    sqrt, × R, × −β); softmax; the mixing Σ_k w cand_state (B gemvs). 3 primitives + B gemvs,
///    one pass over cand_state. oneDNN has no user kernels, so "one kernel" is as few fused
///    primitives as its post-ops allow.
Retrieval build_retrieval(bool fused, const memory& query, const memory& cand_coord,
                          const Viewable& cand_state, const memory& g, const memory& R,
                          StepBuffers& arrays);

// ---- the field (step 9) --------------------------------------------------------------------------

/// The field F, its momentum P and E = (dt/2) k F_eq, in the layout the depthwise convolution
/// runs fast in: the real and the imaginary parts as a batch of two NHWC images of Nx x Ny pixels
/// and D*D channels. Each part is then one dense half of the buffer (R needs them apart) and the
/// zero-padded 5-point Laplacian of every channel is one depthwise 3x3 convolution with kernel
/// [[0,1,0],[1,-4,1],[0,1,0]]. F0 and the outputs keep the input layout [Nx,Ny,D,D,2]: a reorder
/// each way (user_view describes that layout with the internal dimension order).
///
/// A half kick P += (dt/2) Force(F), Force = (ħ²/2m) Lap(F) − k (F − F_eq), is ONE
/// convolution: weights (dt/2)(ħ²/2m) on the four neighbours and (dt/2)(−4 ħ²/2m − k) in the
/// centre, a sum post-op (adds P) and a binary post-op adding E. (oneDNN 2.6's jit depthwise
/// convolution takes no eltwise post-op, so the scaling lives in the weights.) The drift
/// F += (dt/m) P is one binary.
/// Accuracy: P is rounded twice per half kick at its own scale ((conv + P) + E; jit_dw has no
/// binary-then-sum order), where the reference rounds once (P + h Force): P's error against fp64
/// is 1.1e-6 at the default size instead of the serial fp32 reference's 3.2e-7 (tolerance 1e-5;
/// a standalone fp32 model of both orders gives 9.9e-7 and 3.2e-7). Adding E in a separate
/// binary would give it back for one more pass over P per half kick.
class Field {
 public:
  explicit Field(const ref::WindowDims& dims);

  const memory& F() const { return F_; }
  int64_t size() const { return size_; }
  const memory::desc& image_desc() const { return image_; }

  /// A view of a dense [Nx*Ny*D*D*2] array in the input layout, for reorders to and from F or P.
  memory user_view(const memory& array) const { return view(array, user_, 0); }

  /// F = F0 and P = 0, and E = (dt/2) k F_eq with F_eq = F0: the start of a window.
  Program reset(const memory& F0_user) const;
  /// One Störmer–Verlet step: half kick, drift, half kick (3 primitives).
  const Program& step() const { return step_; }
  /// Copies F and P to another pair of arrays: user views (the outputs) or image_desc() arrays
  /// (a snapshot).
  Program copy_to(const memory& F_copy, const memory& P_copy) const;
  /// Copies F and P back from a snapshot.
  Program copy_from(const memory& F_copy, const memory& P_copy) const;

 private:
  void build_step(int64_t channels);

  int64_t size_;
  memory::desc image_, user_;
  memory F_, P_, E_, zeros_, weights_;
  Program step_;
};

// ---- one run_window ------------------------------------------------------------------------------

/// The optimizations of the window ladder in effect, read from the variant's plan.
struct WindowPlan {
  explicit WindowPlan(const pb::VariantContext& context);
  bool eager;             // without inplace: fresh arrays every step, out-of-place accumulators
  bool batched_metrics;   // the 3 metrics stacked, one read per step
  bool speed_once;        // fused_lior_spd: s computed once
  bool fused_retrieval;   // jit_fusion
  bool hoisted_batch;     // hoisted_retrieval_batch: retrieval batch and query once per window
  bool last_step_act;     // the retrieval only in the last step
  bool deferred_metrics;  // the metrics of all steps read once per window
};

/// The window's fixed inputs on the engine (the caller owns them).
struct WindowInputs {
  memory O;                     // [B,T,d]
  memory bank_coord;            // [C,n]
  memory bank_state;            // [C,d]
  memory g;                     // [1,n]
  memory theta;                 // [8]
  std::optional<memory> nudge;  // [B,n] in the nudged window
};

/// One run_window (reference: run_window) on `field`, which run() advances in place; the field
/// is not reset here (the caller does: a window starts from the state it is given).
///
/// A step: R = mean |F| (square, re²+im² with a sqrt post-op, mean: 3 primitives, then R
/// broadcast to the batch by a stride-0 reorder); the retrieval batch (q_state = mean_T O as a
/// matmul with a row of ones, the candidates concat_K(O, bank) as 4 reorders); the query
/// rotor_apply(q + nu, θ) (a host kernel builds the 8x8 rotor matrix, a matmul applies it); the
/// retrieval; the LIoR step; the means, sums and vel_acc; the path row (3 primitives); the
/// progress metrics read by the host; the field step.
class WindowProgram {
 public:
  WindowProgram(const ref::WindowDims& dims, const WindowPlan& plan, const WindowInputs& in,
                const Field& field);

  void run();
  void poison();

  // Results of the last run(), on the engine.
  const memory& scalars() const { return scalars_; }  // [1,3]: R, lior, spd (sums / W)
  memory lior() const { return view(scalars_, dense({1, 1}), 1); }
  const memory& act() const { return retrieval_.act; }  // [B,1,d], the last step's
  const memory& vbar() const { return vbar_; }          // [B,n]
  const memory& path() const { return path_; }          // [W, n+3]
  const memory& q() const { return q_; }                // [B,n]: q_state's first n columns
  /// [W,3]: what the host read at each step, in this engine's order (R, lior, spd) / (t + 1).
  const std::vector<float>& host_progress() const { return host_log_; }
  /// Rows [first, first+count) of q and q_state (views kept valid across steps), for the
  /// training step's memory update.
  memory q_rows(int64_t first, int64_t count);
  memory q_state_rows(int64_t first, int64_t count);

 private:
  memory count(int64_t t) const { return view(counts_, dense({1, 1}), t); }

  void build_curvature();
  void build_batch_and_query();
  void build_retrieval_step();
  void build_lior_step();
  void build_accumulation();
  void build_path_and_progress();
  void build_finish();

  void begin_window();
  void step(int64_t t);
  void update_accumulators(const Program& update);
  void report_progress(int64_t t);

  ref::WindowDims dims_;
  WindowPlan plan_;
  WindowInputs in_;
  const Field& field_;
  StepBuffers arrays_;
  memory counts_, zeros_;
  memory scalars_, vbar_, path_, metrics_log_;  // results and the deferred metrics [W,3]
  std::vector<float> host_log_;                 // what the host reads: t x (R, lior, spd) / t
  RenewableMemory *stack_ = nullptr, *q_state_ = nullptr, *q_buffer_ = nullptr,
                  *cand_coord_ = nullptr, *cand_state_ = nullptr, *query_rotated_ = nullptr,
                  *means_ = nullptr, *progress_ = nullptr;
  memory R_column_, R_cube_, q_;
  std::optional<Accumulator> velocity_;
  std::vector<Accumulator> metric_sums_;
  Retrieval retrieval_;
  Program curvature_, batch_and_query_, lior_, means_step_, accumulate_, reset_, finish_;
  std::vector<Program> path_rows_;
  std::vector<std::vector<Execution>> progress_steps_;
  std::vector<memory> progress_entries_;
};

/// One window's outputs (names with `prefix`): the scalars, act, vbar, path, and F and P from the
/// dense arrays they were exported to, shaped as F0 (`field_shape`).
void add_window_outputs(pb::ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims,
                        const WindowProgram& window, const memory& F, const memory& P,
                        const std::vector<int64_t>& field_shape);

}  // namespace pb::onednn_backend::trainer2
