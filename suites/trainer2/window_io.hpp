#pragma once
// Inputs and outputs of the trainer2 window and training step, shared by their definitions, the
// reference variants and every backend's variants (so all agree on names, shapes and packing).
//
// Window inputs:  O [B,T,d], bank_coord [C,n], bank_state [C,d], F0 [Nx,Ny,D,D,2] (complex as
//                 (re, im)), g [n], theta [8] (6 learnt angles, 2 zero pads).
// Window outputs: lior, R, spd (scalars), act [B,d], vbar [B,n], path [W, n+3], progress [W,3]
//                 (what the host read at each step: lior, R, spd accumulated over t+1 steps), F and
//                 P (as F0).
// Training step:  the window inputs plus target [B,n] and bank_pointer (int64 scalar); outputs
//                 free_* and nudged_* (each window's outputs), g, theta, bank_coord, bank_state,
//                 bank_pointer.

#include <string>
#include <vector>

#include "phasebench/arrays.hpp"
#include "phasebench/workload.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb::suites::trainer2 {

namespace ref = pb::reference::trainer2;

ref::WindowDims window_dims(SizeClass size);
std::string window_shape(SizeClass size);

ArrayMap make_window_inputs(SizeClass size, uint64_t seed);
/// The window inputs plus target and bank_pointer.
ArrayMap make_train_step_inputs(SizeClass size, uint64_t seed);

/// The dims of the arrays in `inputs` (as made above, at any size).
ref::WindowDims window_dims_of(const ArrayMap& inputs);

/// Output specs of one window, names prefixed (`free_`, `nudged_` or none).
std::vector<OutputSpec> window_output_specs(const std::string& prefix);

/// Packs one window's results (any scalar type) as outputs named with `prefix`.
template <typename Scalar>
void add_window_outputs(ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims,
                        const ref::WindowResult<Scalar>& window, const std::vector<Scalar>& F,
                        const std::vector<Scalar>& P, ElementType type);

/// The training step's outputs besides the two windows'.
template <typename Scalar>
void add_train_state_outputs(ArrayMap& out, const ref::WindowDims& dims,
                             const ref::TrainState<Scalar>& state, ElementType type);

/// The reference's inputs in scalar type Scalar (fp32 variants: float).
template <typename Scalar>
std::vector<Scalar> values_as(const HostArray& array) {
  return std::vector<Scalar>(array.values.begin(), array.values.end());
}

/// A training state initialized from the inputs: field F0, P = 0, F_eq = F0, bank, g, θ, pointer.
template <typename Scalar>
ref::TrainState<Scalar> initial_train_state(const ArrayMap& inputs);

/// The fp64 or fp32 reference window and training step on `inputs`.
template <typename Scalar>
ArrayMap reference_window(const ArrayMap& inputs, ElementType type);
template <typename Scalar>
ArrayMap reference_train_step(const ArrayMap& inputs, ElementType type);

}  // namespace pb::suites::trainer2

namespace pb::suites::trainer2 {

/// Declared work of one window and of one training step: the compulsory bytes (each input read
/// once, each output written once) and the flops the math needs (each distinct value computed
/// once). The counts, term by term, are in window_io.cpp.
WorkEstimate window_work(SizeClass size);
WorkEstimate train_step_work(SizeClass size);
double window_memory(SizeClass size);

}  // namespace pb::suites::trainer2
