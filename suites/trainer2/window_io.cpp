#include "suites/trainer2/window_io.hpp"

#include "phasebench/rng.hpp"
#include "suites/trainer2/sizes.hpp"

namespace pb::suites::trainer2 {

ref::WindowDims window_dims(SizeClass size) {
  const Trainer2Size s = trainer2_size(size);
  return {s.batch,    s.tokens,   s.state_dim,
          s.bank_rows, s.field_nx, s.field_ny,
          static_cast<int64_t>(s.field_channels) * s.field_channels * 2, s.window_steps};
}

std::string window_shape(SizeClass size) {
  const Trainer2Size s = trainer2_size(size);
  return "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.tokens) + " d=" +
         std::to_string(s.state_dim) + " C=" + std::to_string(s.bank_rows) + " field=" +
         std::to_string(s.field_nx) + "x" + std::to_string(s.field_ny) + "x" +
         std::to_string(s.field_channels) + "x" + std::to_string(s.field_channels) +
         " W=" + std::to_string(s.window_steps);
}

ref::WindowDims window_dims_of(const ArrayMap& inputs) {
  const HostArray& O = require(inputs, "O");
  const HostArray& F0 = require(inputs, "F0");
  const HostArray& bank = require(inputs, "bank_state");
  ref::WindowDims dims{};
  dims.batch = O.shape.at(0);
  dims.tokens = O.shape.at(1);
  dims.state_dim = O.shape.at(2);
  dims.bank_rows = bank.shape.at(0);
  dims.nx = F0.shape.at(0);
  dims.ny = F0.shape.at(1);
  dims.channels = F0.shape.at(2) * F0.shape.at(3) * 2;
  dims.steps = static_cast<int64_t>(require(inputs, "steps").values.at(0));
  return dims;
}

namespace {

// Bank rows at and past `fill` are empty: +1e4 on every coordinate gives them zero weight, as in
// the original. The last eighth of the bank is left empty so that path is exercised.
int64_t bank_fill(int64_t rows) { return rows - rows / 8; }

}  // namespace

// O ~ N(0,1); bank ~ N(0,1); F0 re/im ~ N(0, 0.3) so R = mean |F| ≈ 0.38 and β R spd spreads
// the softmax over many candidates; g ~ U[0.5,1.5]; θ ~ U[−0.5,0.5] (defined here: the original
// starts at zero, an identity rotor that would hide bugs).
ArrayMap make_window_inputs(SizeClass size, uint64_t seed) {
  const Trainer2Size s = trainer2_size(size);
  const int64_t n = ref::kCoordinateDim;
  ArrayMap in;
  in["O"] = normal_array(seed, "trainer2/O", {s.batch, s.tokens, s.state_dim}, 0, 1);
  in["bank_coord"] = normal_array(seed, "trainer2/bank_coord", {s.bank_rows, n}, 0, 1);
  // Rounded again after the shift: the oracle must compute from the very floats the variants get.
  for (int64_t row = bank_fill(s.bank_rows); row < s.bank_rows; ++row)
    for (int64_t i = 0; i < n; ++i) {
      double& value = in["bank_coord"].values[row * n + i];
      value = round_to(ElementType::Float32, value + 1e4);
    }
  in["bank_state"] = normal_array(seed, "trainer2/bank_state", {s.bank_rows, s.state_dim}, 0, 1);
  in["F0"] = normal_array(seed, "trainer2/F0",
                          {s.field_nx, s.field_ny, s.field_channels, s.field_channels, 2}, 0, 0.3);
  in["g"] = uniform_array(seed, "trainer2/g", {n}, 0.5, 1.5);
  in["theta"] = uniform_array(seed, "trainer2/theta", {ref::kRotorSlots}, -0.5, 0.5);
  for (int k = ref::kRotorAngles; k < ref::kRotorSlots; ++k) in["theta"].values[k] = 0;
  in["steps"] = HostArray::scalar(static_cast<double>(s.window_steps), ElementType::Int64);
  return in;
}

// target ~ N(0, 0.5) (the original mean-pools an embedding of the next tokens); the bank pointer
// starts min(C,B)/2 rows before the end so the memory update wraps around the ring (defined here).
ArrayMap make_train_step_inputs(SizeClass size, uint64_t seed) {
  const Trainer2Size s = trainer2_size(size);
  ArrayMap in = make_window_inputs(size, seed);
  in["target"] = normal_array(seed, "trainer2/target", {s.batch, ref::kCoordinateDim}, 0, 0.5);
  const int64_t written = std::min(s.bank_rows, s.batch);
  in["bank_pointer"] = HostArray::scalar(static_cast<double>(s.bank_rows - std::max<int64_t>(1, written / 2)),
                                         ElementType::Int64);
  return in;
}

// Tolerances: fp32 round-off bounds with a margin over the serial fp32 reference's error against the
// fp64 oracle, whose serial sums are the worst case of the variants (figures: docs/trainer2.md).
std::vector<OutputSpec> window_output_specs(const std::string& prefix) {
  const std::string curvature =
      "R = mean |F| over up to 200,704 complex values in fp32, in any order: ~sqrt(N) ulp; lior, spd and "
      "the path carry it";
  const std::string mixing =
      "softmax logits beta*R*spd ~ 10 amplify R's fp32 error, then K <= 3072 fp32 terms are summed";
  const std::string field = "fp32 Stormer-Verlet over 2W half steps: force round-off accumulates in P";
  return {
      {prefix + "lior", 2e-5, curvature},
      {prefix + "R", 2e-5, curvature},
      {prefix + "spd", 1e-5, "fp32 mean of B speeds accumulated W times"},
      {prefix + "act", 1e-4, mixing},
      {prefix + "vbar", 1e-5, "fp32 mean over T tokens accumulated W times"},
      {prefix + "path", 2e-5, curvature},
      {prefix + "progress", 2e-5, "the host's per-step reads (lior_acc, R_acc, spd_acc over t+1 steps): " + curvature},
      {prefix + "F", 1e-5, field},
      {prefix + "P", 1e-5, field}};
}

template <typename Scalar>
void add_window_outputs(ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims,
                        const ref::WindowResult<Scalar>& window, const std::vector<Scalar>& F,
                        const std::vector<Scalar>& P, ElementType type) {
  const int64_t B = dims.batch, n = ref::kCoordinateDim;
  const int64_t D = static_cast<int64_t>(std::lround(std::sqrt(dims.channels / 2.0)));
  auto array = [type](std::vector<int64_t> shape, const std::vector<Scalar>& values) {
    HostArray a = HostArray::zeros(std::move(shape), type);
    a.values.assign(values.begin(), values.end());
    return a;
  };
  out[prefix + "lior"] = HostArray::scalar(window.lior, type);
  out[prefix + "R"] = HostArray::scalar(window.R, type);
  out[prefix + "spd"] = HostArray::scalar(window.spd, type);
  out[prefix + "act"] = array({B, dims.state_dim}, window.act);
  out[prefix + "vbar"] = array({B, n}, window.vbar);
  out[prefix + "path"] = array({dims.steps, ref::kPathColumns}, window.path);
  out[prefix + "progress"] = array({dims.steps, 3}, window.progress);
  out[prefix + "F"] = array({dims.nx, dims.ny, D, D, 2}, F);
  out[prefix + "P"] = array({dims.nx, dims.ny, D, D, 2}, P);
}

template <typename Scalar>
void add_train_state_outputs(ArrayMap& out, const ref::WindowDims& dims,
                             const ref::TrainState<Scalar>& state, ElementType type) {
  auto array = [type](std::vector<int64_t> shape, const std::vector<Scalar>& values) {
    HostArray a = HostArray::zeros(std::move(shape), type);
    a.values.assign(values.begin(), values.end());
    return a;
  };
  out["g"] = array({ref::kCoordinateDim}, state.g);
  out["theta"] = array({ref::kRotorSlots}, state.theta);
  out["bank_coord"] = array({dims.bank_rows, ref::kCoordinateDim}, state.bank_coord);
  out["bank_state"] = array({dims.bank_rows, dims.state_dim}, state.bank_state);
  out["bank_pointer"] = HostArray::scalar(static_cast<double>(state.bank_pointer), ElementType::Int64);
}

template <typename Scalar>
ref::TrainState<Scalar> initial_train_state(const ArrayMap& inputs) {
  ref::TrainState<Scalar> state;
  state.F = values_as<Scalar>(require(inputs, "F0"));
  state.F_eq = state.F;
  state.P.assign(state.F.size(), Scalar(0));
  state.bank_coord = values_as<Scalar>(require(inputs, "bank_coord"));
  state.bank_state = values_as<Scalar>(require(inputs, "bank_state"));
  state.g = values_as<Scalar>(require(inputs, "g"));
  state.theta = values_as<Scalar>(require(inputs, "theta"));
  if (inputs.count("bank_pointer"))
    state.bank_pointer = static_cast<int64_t>(require(inputs, "bank_pointer").values.at(0));
  return state;
}

template <typename Scalar>
ArrayMap reference_window(const ArrayMap& inputs, ElementType type) {
  const ref::WindowDims dims = window_dims_of(inputs);
  ref::TrainState<Scalar> state = initial_train_state<Scalar>(inputs);
  const std::vector<Scalar> O = values_as<Scalar>(require(inputs, "O"));
  const ref::WindowInputs<Scalar> in{O.data(), state.bank_coord.data(), state.bank_state.data(),
                                     state.g.data(), state.theta.data(), nullptr};
  const auto window = ref::run_window(dims, in, state.F, state.P, state.F_eq);
  ArrayMap out;
  add_window_outputs(out, "", dims, window, state.F, state.P, type);
  return out;
}

template <typename Scalar>
ArrayMap reference_train_step(const ArrayMap& inputs, ElementType type) {
  const ref::WindowDims dims = window_dims_of(inputs);
  ref::TrainState<Scalar> state = initial_train_state<Scalar>(inputs);
  const std::vector<Scalar> O = values_as<Scalar>(require(inputs, "O"));
  const std::vector<Scalar> target = values_as<Scalar>(require(inputs, "target"));
  const auto step = ref::train_step(dims, O.data(), target.data(), state);
  ArrayMap out;
  add_window_outputs(out, "free_", dims, step.free, step.free_F, step.free_P, type);
  add_window_outputs(out, "nudged_", dims, step.nudged, state.F, state.P, type);
  add_train_state_outputs(out, dims, state, type);
  return out;
}

#define PB_INSTANTIATE(Scalar)                                                                   \
  template void add_window_outputs<Scalar>(ArrayMap&, const std::string&, const ref::WindowDims&, \
                                           const ref::WindowResult<Scalar>&,                      \
                                           const std::vector<Scalar>&, const std::vector<Scalar>&, \
                                           ElementType);                                          \
  template void add_train_state_outputs<Scalar>(ArrayMap&, const ref::WindowDims&,               \
                                                const ref::TrainState<Scalar>&, ElementType);     \
  template ref::TrainState<Scalar> initial_train_state<Scalar>(const ArrayMap&);                 \
  template ArrayMap reference_window<Scalar>(const ArrayMap&, ElementType);                      \
  template ArrayMap reference_train_step<Scalar>(const ArrayMap&, ElementType);
PB_INSTANTIATE(float)
PB_INSTANTIATE(double)
#undef PB_INSTANTIATE

}  // namespace pb::suites::trainer2

namespace pb::suites::trainer2 {

// Declared work (docs/roofline.md, "Declared work"). A flop is one add, multiply, divide, max, compare, sqrt,
// exp, cos, sin, atan2 or fmod. The flops are what the math of reference/trainer2/trainer2.hpp
// needs, each distinct value computed once, not what the baseline does: a value that does not
// change between the steps of a window (the query, the velocity, s, every candidate's distance)
// counts once; the softmax and the state mixing count for the last step only, the one whose act is
// returned; the force at the end of a step is the force at the start of the next (same F), so a
// window has W + 1 force evaluations. Names: B, T, d, C, K = T + C, n = 8, W steps, and
// `field` = Nx Ny D D 2 real values.
//
// One window, once:
//   query q = mean_T coords                                            B n (T + 1)
//   rotor q' = rotor(q): cos, sin of 8 slots; per pair 4 mul, 2 add    16 + 48 B
//   distances: u, g u^2, sum (4n); max, +eps, sqrt (3)                 B K (4n + 3)
//   s = sqrt(max(0, g v^2) + eps) (3n + 3) and mean_b s (B + 1)        B (3n + 3) + B + 1
//   path columns 0..n: mean_b v (B n + n), its norm (2n + 1)           B n + 3n + 1
//   last step: R spd, -beta cost (2), softmax (5); mixing (2d)         B K (7 + 2d)
//   results: lior, R, spd / W (3), vbar = vel_acc / W (B n)            3 + B n
// Every step:
//   R = mean |F|: per complex value 2 mul, add, sqrt, sum (5), divide  5 field/2 + 1
//   dlior = R s and mean_b (2B + 1), mean_b R (B + 1), accumulators    3B + 5 + B n
//     (lior, R, spd: 3; vel_acc: B n)
//   progress: the three accumulators over t + 1                        3
//   two half kicks and a drift, 2 flops each per real value            6 field
// Per window, the force evaluations, 9 flops per real value (5-point
// Laplacian 5, scale 1, F - F_eq 1, scale 1, difference 1)             (W + 1) 9 field
//
// Bytes, fp32 unless said (a window starts from F0 and P = 0, so P0 is not read):
//   read                                                               O [B,T,d], bank_coord [C,n], bank_state [C,d], F0 [field], g [n], theta [8], steps (int64)
//   write  lior, R, spd, act [B,d], vbar [B,n], path [W,n+3], progress [W,3], F [field], P [field]
// Default: 472,507,565 flops and 9,097,300 bytes per window. (What the baseline does, the
// declaration before the compulsory one: 1.87 GFLOP and 3.18 GB, the retrieval, the mixing and the
// candidate batch redone at every step.)
namespace {

struct WindowWork {
  double flops_once = 0, flops_per_step = 0, force_flops = 0;
  double input_bytes = 0, output_bytes = 0;
};

WindowWork window_terms(SizeClass size) {
  const ref::WindowDims dims = window_dims(size);
  const double B = dims.batch, T = dims.tokens, d = dims.state_dim, C = dims.bank_rows;
  const double K = dims.candidates(), n = ref::kCoordinateDim, W = dims.steps;
  const double field = static_cast<double>(dims.field_size()), slots = ref::kRotorSlots;
  WindowWork work;
  work.flops_once = B * n * (T + 1)                   // query
                    + 2 * slots + 6 * slots * B       // rotor: cos, sin; 4 mul + 2 add per pair
                    + B * K * (4 * n + 3)             // distances
                    + B * (3 * n + 3) + B + 1         // s and mean_b s
                    + B * n + 3 * n + 1               // mean_b v and its norm
                    + B * K * (7 + 2 * d)             // last step's softmax and mixing
                    + 3 + B * n;                      // lior, R, spd, vbar divided by W
  work.flops_per_step = 5 * field / 2 + 1             // R = mean |F|
                        + 3 * B + 5 + B * n           // dlior, means, accumulators
                        + 3                           // progress: accumulators / (t + 1)
                        + 6 * field;                  // kicks and drift
  work.force_flops = (W + 1) * 9 * field;
  work.input_bytes = 4.0 * (B * T * d + C * n + C * d + field + n + slots) + 8;
  work.output_bytes = 4.0 * (3 + B * d + B * n + W * (n + 3) + W * 3 + 2 * field);
  return work;
}

}  // namespace

WorkEstimate window_work(SizeClass size) {
  const WindowWork w = window_terms(size);
  const double steps = static_cast<double>(window_dims(size).steps);
  return {w.flops_once + steps * w.flops_per_step + w.force_flops, w.input_bytes + w.output_bytes};
}

// One training step: the free window (above), then what the math needs beyond it. The nudge moves
// only the retrieval query, so the nudged window's field, R, s, lior, vbar and path are the free
// window's values (README: Δ = 0 exactly) and count once; its query, distances, softmax and
// mixing are new:
//   q_state = mean_T O (the memory update)                             B d (T + 1)
//   nu = 0.1 (target - q) (2), q + nu (1)                              3 B n
//   rotor of q + nu (cos, sin shared)                                  48 B
//   distances, last step's softmax and mixing                          B K (4n + 3) + B K (7 + 2d)
//   delta (1); u = mean_b vbar (B n + n); u_r = rotor(u) (48); metric update: |u_r|^2 (2n),
//   + 1e-8 (1), eta delta (1), per g_i: multiply, divide, add, two
//   clamps (5n)                                                        3 + B n + 8n + 48
//   rotor update (as trainer2/rotor_update)                            87;   ring pointer: add, modulo (2)
// Bytes: the window's inputs plus target [B,n] and bank_pointer (int64); written: both windows'
// outputs, g [n], theta [8], bank_coord [C,n], bank_state [C,d], bank_pointer (int64).
// Default: 492,325,497 flops and 14,492,336 bytes (what the baseline does: 3.75 GFLOP, 6.35 GB).
WorkEstimate train_step_work(SizeClass size) {
  const WindowWork w = window_terms(size);
  const ref::WindowDims dims = window_dims(size);
  const double B = dims.batch, T = dims.tokens, d = dims.state_dim, C = dims.bank_rows;
  const double K = dims.candidates(), n = ref::kCoordinateDim, slots = ref::kRotorSlots;
  const double free_window = window_work(size).flops;
  const double beyond = B * d * (T + 1)                         // q_state
                        + 3 * B * n                             // nudge
                        + 6 * slots * B                         // rotor of q + nu
                        + B * K * (4 * n + 3) + B * K * (7 + 2 * d)  // nudged retrieval
                        + 3 + B * n + 8 * n + 6 * slots         // delta, u, u_r, metric update
                        + ref::kRotorAngles * 9.0 + 1 + slots * 4 // rotor update
                        + 2;                                    // ring pointer
  const double bytes = w.input_bytes + 4.0 * B * n + 8                        // + target, pointer
                       + 2 * w.output_bytes + 4.0 * (n + slots + C * n + C * d) + 8;
  return {free_window + beyond, bytes};
}

double window_memory(SizeClass size) {
  const ref::WindowDims dims = window_dims(size);
  const double K = dims.candidates();
  return 8.0 * (dims.batch * K * (dims.state_dim + ref::kCoordinateDim + 1) + 6.0 * dims.field_size());
}

}  // namespace pb::suites::trainer2
