// The trainer2 engine on oneDNN (declarations, and what runs how: trainer2_engine-onednn.hpp).

#include "optimized/trainer2/trainer2_engine-onednn.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "suites/trainer2/phases.hpp"

namespace pb::onednn_backend::trainer2 {

using dnnl::algorithm;

namespace {

constexpr float kEps = static_cast<float>(ref::kLiorEps);
constexpr float kBeta = static_cast<float>(ref::kRetrievalBeta);
// The oracle's rotor threshold, compared in double as the oracle compares it: 1e-6f is just below
// 1e-6, so `r >= 1e-6f` would update a pair at r == 1e-6f that the fp64 reference leaves alone.
constexpr double kMinRotorRadius = 1e-6;

}  // namespace

// ---- storage of a step ---------------------------------------------------------------------------

Accumulator::Accumulator(const memory::desc& desc, bool in_place)
    : desc_(desc),
      in_place_(in_place),
      storage_(ob::allocate(desc)),
      value_(desc, ob::engine(), storage_.get_data_handle()),
      next_(in_place ? value_ : memory(desc, ob::engine(), storage_.get_data_handle())) {}

void Accumulator::before_update() {
  if (in_place_) return;
  next_storage_ = ob::allocate(desc_);
  next_.set_data_handle(next_storage_.get_data_handle());
}

void Accumulator::after_update() {
  if (in_place_) return;
  storage_ = std::move(next_storage_);
  next_storage_ = memory();
  value_.set_data_handle(storage_.get_data_handle());
}

// ---- the rotor -----------------------------------------------------------------------------------

namespace {

float wrap_angle(float theta) {
  const float pi = static_cast<float>(ref::kPi), two_pi = static_cast<float>(2 * ref::kPi);
  float wrapped = std::fmod(theta + pi, two_pi);
  if (wrapped < 0) wrapped += two_pi;
  return wrapped - pi;
}

void wrap_angles(float* theta) {
  for (int k = 0; k < ref::kRotorSlots; ++k) theta[k] = wrap_angle(theta[k]);
}

/// One learnt pair's increment of θ: 0.01 η (−Δ) atan2(u_j, u_i) r.
float rotor_increment(float negated_diff, float angle, float r) {
  constexpr float kRotorRate = static_cast<float>(0.01 * ref::kEta);  // 0.01 η
  return kRotorRate * negated_diff * angle * r;
}

}  // namespace

Program rotor_matrix(const memory& theta, const memory& matrix) {
  Program program;
  program.kernel([theta, matrix] {
    const float* angle = ob::host_floats(theta);
    float* rows = ob::host_floats(matrix);
    std::fill(rows, rows + kN * kN, 0.0f);
    for (int64_t i = 0; i < kN; ++i) rows[i * kN + i] = 1.0f;
    for (int k = 0; k < ref::kRotorSlots; ++k) {
      int a, b;
      ref::rotor_pair(k, a, b);
      const float c = std::cos(angle[k]), s = std::sin(angle[k]);
      for (int64_t i = 0; i < kN; ++i) {  // every row is rotated as its own vector
        const float xa = rows[i * kN + a], xb = rows[i * kN + b];
        rows[i * kN + a] = c * xa - s * xb;
        rows[i * kN + b] = s * xa + c * xb;
      }
    }
  });
  return program;
}

Program metric_update(const memory& u, const memory& theta, const memory& lior_diff, const memory& g) {
  const auto vector = [] { return ob::allocate(ob::dense({1, kN})); };
  const auto scalar = [] { return ob::allocate(ob::dense({1, 1})); };
  const memory rotor = ob::allocate(ob::dense({kN, kN}));
  const memory u_r = vector(), squares = vector(), scaled = vector(), term = vector(), step = vector();
  const memory norm = scalar(), eta_diff = scalar();
  Program program = rotor_matrix(theta, rotor);
  program.add(ob::matmul(u, rotor, u_r));
  program.add(ob::eltwise(algorithm::eltwise_square, u_r, squares));
  program.add(ob::reduce(algorithm::reduction_sum, squares, norm,
                         ob::PostOps().eltwise(algorithm::eltwise_linear, 1.0f, 1e-8f)));
  program.add(ob::eltwise(algorithm::eltwise_linear, lior_diff, eta_diff, static_cast<float>(ref::kEta)));
  program.add(ob::binary(algorithm::binary_mul, u_r, eta_diff, scaled));
  program.add(ob::binary(algorithm::binary_mul, scaled, u_r, term));
  program.add(ob::binary(algorithm::binary_div, term, norm, step));
  program.add(ob::binary(algorithm::binary_add, g, step, g,
                         ob::PostOps().eltwise(algorithm::eltwise_clip, 0.01f, 100.0f)));
  return program;
}

RotorUpdate::RotorUpdate(bool vectorized, const memory& u, const memory& lior_diff,
                         const memory& theta)
    : vectorized_(vectorized), u_(u), lior_diff_(lior_diff), theta_(theta) {
  std::vector<float> table;
  for (int k = 0; k < ref::kRotorAngles; ++k) {
    int i, j;
    ref::rotor_pair(k, i, j);
    table.push_back(static_cast<float>(i));
    table.push_back(static_cast<float>(j));
  }
  pairs_ = upload(dense({ref::kRotorAngles, 2}), table);  // exact small integers
  for (int64_t e = 0; e < 2 * ref::kRotorAngles; ++e)
    pair_entries_.push_back(view(pairs_, dense({1, 1}), e));
  for (int64_t i = 0; i < kN; ++i) u_entries_.push_back(view(u_, dense({1, 1}), i));
}

void RotorUpdate::operator()() const {
  if (vectorized_) {
    ob::run_host_kernel([this] { update_all(); });
  } else {
    update_pair_by_pair();
  }
}

void RotorUpdate::update_pair_by_pair() const {
  for (int k = 0; k < ref::kRotorAngles; ++k) {
    float i = 0, j = 0, u_i = 0, u_j = 0;
    ob::read_floats_to_host(pair_entries_[2 * k], &i, 1);
    ob::read_floats_to_host(pair_entries_[2 * k + 1], &j, 1);
    ob::read_floats_to_host(u_entries_[static_cast<size_t>(i)], &u_i, 1);
    ob::read_floats_to_host(u_entries_[static_cast<size_t>(j)], &u_j, 1);
    const float r = std::hypot(u_i, u_j);
    if (r < kMinRotorRadius) continue;
    const float angle = std::atan2(u_j, u_i);
    ob::run_host_kernel([this, k, angle, r] {
      const float negated_diff = -ob::host_floats(lior_diff_)[0];
      ob::host_floats(theta_)[k] += rotor_increment(negated_diff, angle, r);
    });
  }
  ob::run_host_kernel([this] { wrap_angles(ob::host_floats(theta_)); });
}

void RotorUpdate::update_all() const {
  const float* u = ob::host_floats(u_);
  const float negated_diff = -ob::host_floats(lior_diff_)[0];
  float* theta = ob::host_floats(theta_);
  for (int k = 0; k < ref::kRotorAngles; ++k) {
    int i, j;
    ref::rotor_pair(k, i, j);
    const float r = std::hypot(u[i], u[j]);
    if (r >= kMinRotorRadius) theta[k] += rotor_increment(negated_diff, std::atan2(u[j], u[i]), r);
  }
  wrap_angles(theta);
}

// ---- the speed s and the LIoR step (step 5) ------------------------------------------------------

namespace {

/// g [1,n] as the row [1,..,1,n] that broadcasts over an array of `rank` dimensions.
memory g_row(const memory& g, size_t rank, int64_t n) {
  Dims dims(rank, 1);
  dims.back() = n;
  return view(g, dense(dims), 0);
}

/// g [1,n] as the column [1,..,1,n,1] a matmul over arrays of `rank` dimensions takes as weights.
memory g_column(const memory& g, size_t rank, int64_t n) {
  Dims dims(rank, 1);
  dims[rank - 2] = n;
  return view(g, dense(dims), 0);
}

/// out [..,1] = sqrt(max(0, Σ_i g_i squares_i) + eps), times each of `factors`: one matmul with g
/// as a column, whose post-ops finish the chain. The factors are binary post-ops: oneDNN 2.6's
/// brgemm matmul computes a second eltwise_linear post-op of one chain with the first one's alpha
/// and beta (relu, linear, sqrt, linear gives wrong results).
/// Why a matmul (fused_quadratic_form): the obvious fusion (binary v*v with a mul-by-g binary
/// post-op, then the sum reduction with three eltwise post-ops) is slower in oneDNN 2.6 than the
/// unfused chain on [M,8] rows, and a square followed by a matmul with post-ops is the fastest
/// of the three (docs/trainer2.md has the times).
Execution root_of_weighted_sum(const memory& squares, const memory& g, const memory& out,
                               const std::vector<memory>& factors) {
  const Dims dims = dims_of(squares.get_desc());
  PostOps post;
  post.eltwise(algorithm::eltwise_relu)
      .eltwise(algorithm::eltwise_linear, 1.0f, kEps)
      .eltwise(algorithm::eltwise_sqrt);
  for (const memory& factor : factors) post.binary(algorithm::binary_mul, factor);
  return matmul(squares, g_column(g, dims.size(), dims.back()), out, post);
}

/// s = sqrt(max(0, Σ_i weighted_i) + eps) op by op: the sum over n into `form`, max(0, .) into
/// `clamped`, + eps into `shifted`, sqrt into s (any of them may be s itself: in place).
Program root_of_sum(const memory& weighted, const memory& form, const memory& clamped,
                    const memory& shifted, const memory& s) {
  Program program;
  program.add(reduce(algorithm::reduction_sum, weighted, form));
  program.add(eltwise(algorithm::eltwise_relu, form, clamped));
  program.add(eltwise(algorithm::eltwise_linear, clamped, shifted, 1.0f, kEps));
  program.add(eltwise(algorithm::eltwise_sqrt, shifted, s));
  return program;
}

}  // namespace

Program speed(const memory& v, const memory& g, const memory& s, StepBuffers& arrays,
              QuadraticForm form) {
  const Dims dims = dims_of(v.get_desc());
  const memory g_broadcast = g_row(g, dims.size(), dims.back());
  const memory first = arrays.make(dense(dims));  // g v, or v²
  Program program;
  if (form == QuadraticForm::WeightFirst) {
    const memory weighted = arrays.make(dense(dims));
    Dims column = dims;
    column.back() = 1;
    const memory sum = arrays.make(dense(column));
    const memory clamped = arrays.make(dense(column));
    const memory shifted = arrays.make(dense(column));
    program.add(binary(algorithm::binary_mul, v, g_broadcast, first));
    program.add(binary(algorithm::binary_mul, first, v, weighted));
    program.append(root_of_sum(weighted, sum, clamped, shifted, s));
    return program;
  }
  program.add(eltwise(algorithm::eltwise_square, v, first));
  if (form == QuadraticForm::Fused) {
    program.add(root_of_weighted_sum(first, g, s, {}));
    return program;
  }
  program.add(binary(algorithm::binary_mul, first, g_broadcast, first));
  program.append(root_of_sum(first, s, s, s, s));
  return program;
}

LiorStep lior_step(const memory& v, const memory& g, const memory& R, const memory& dlior,
                   const memory& metrics_s, bool speed_once, QuadraticForm form,
                   StepBuffers& arrays) {
  LiorStep out;
  out.s = speed_once ? metrics_s : arrays.make(metrics_s.get_desc());
  out.program.append(speed(v, g, out.s, arrays, form));
  out.program.add(binary(algorithm::binary_mul, out.s, R, dlior));
  if (!speed_once) out.program.append(speed(v, g, metrics_s, arrays, form));
  return out;
}

// ---- the retrieval (step 4) ----------------------------------------------------------------------

namespace {

/// act[b] = Σ_k weights[b,k] states[b,k] for weights [B,K] (or, shared, one [1,K] row for every
/// b), states [B,K,d], act [B,1,d]: one inner product (a gemv) per b. A batched matmul
/// [B,1,K] x [B,K,d] computes the same, but oneDNN 2.6's brgemm reads the states several times
/// slower than the gemv does.
Program weighted_sum_over_candidates(const Viewable& weights, bool shared_weights,
                                     const Viewable& states, const Viewable& act) {
  const Dims dims = dims_of(states.get().get_desc());
  const int64_t B = dims[0], K = dims[1], d = dims[2];
  const memory::desc row = dense({1, K}), out = dense({1, d});
  const memory::desc columns = strided({d, K}, {1, d});  // states[b] as "io" weights
  const auto pd = inner_product_pd(row, columns, out);
  Program program;
  for (int64_t b = 0; b < B; ++b) {
    // (views do not own their storage: the shared row is bound itself, which keeps it alive)
    program.add(Execution(pd, {{DNNL_ARG_SRC, shared_weights ? weights.get() : weights.view(row, b * K)},
                               {DNNL_ARG_WEIGHTS, states.view(columns, b * K * d)},
                               {DNNL_ARG_DST, act.view(out, b * d)}}));
  }
  return program;
}

}  // namespace

Retrieval build_retrieval(bool fused, const memory& query, const memory& cand_coord,
                          const Viewable& cand_state, const memory& g, const memory& R,
                          StepBuffers& arrays) {
  const Dims coord_dims = dims_of(cand_coord.get_desc());
  const int64_t B = coord_dims[0], K = coord_dims[1], n = coord_dims[2];
  const int64_t d = dims_of(cand_state.get().get_desc())[2];
  Retrieval out;
  RenewableMemory& weights = arrays.add(dense({B, K}));
  RenewableMemory& act = arrays.add(dense({B, 1, d}));
  out.weights = weights.get();
  out.act = act.get();
  RenewableMemory& logits = arrays.add(dense({B, K, 1}));
  const memory logits_rows = logits.view(dense({B, K}));
  if (fused) {
    const memory squares = arrays.make(dense({B, K, n}));
    out.program.add(binary(algorithm::binary_sub, cand_coord, query, squares,
                           PostOps().eltwise(algorithm::eltwise_square)));
    out.program.add(root_of_weighted_sum(squares, g, logits.get(), {R, filled({1, 1, 1}, -kBeta)}));
    out.program.add(softmax(logits_rows, weights.get(), 1));
    out.program.append(weighted_sum_over_candidates(weights, false, cand_state, act));
    return out;
  }
  const memory u = arrays.make(dense({B, K, n}));
  const memory spd = arrays.make(dense({B, K, 1}));
  const memory cost = arrays.make(dense({B, K, 1}));
  out.program.add(binary(algorithm::binary_sub, cand_coord, query, u));
  out.program.append(speed(u, g, spd, arrays, QuadraticForm::WeightFirst));
  out.program.add(binary(algorithm::binary_mul, spd, R, cost));
  out.program.add(eltwise(algorithm::eltwise_linear, cost, logits.get(), -kBeta, 0.0f));
  out.program.add(softmax(logits_rows, weights.get(), 1));
  RenewableMemory& products = arrays.add(dense({B, K, d}));
  out.program.add(binary(algorithm::binary_mul, cand_state.get(), weights.view(dense({B, K, 1})),
                         products.get()));
  out.program.append(weighted_sum_over_candidates(filled({1, K}, 1.0f), true, products, act));
  return out;
}

// ---- the field (step 9) --------------------------------------------------------------------------

namespace {

constexpr double kHalfDt = ref::kDt / 2;

/// One reorder per (source, destination) pair, in order.
Program copies(const std::vector<std::pair<memory, memory>>& pairs) {
  Program program;
  for (const auto& [source, destination] : pairs) program.add(copy(source, destination));
  return program;
}

}  // namespace

Field::Field(const ref::WindowDims& dims)
    : size_(dims.field_size()),
      image_({2, dims.channels / 2, dims.nx, dims.ny}, memory::data_type::f32,
             memory::format_tag::nhwc),
      user_(strided({2, dims.channels / 2, dims.nx, dims.ny},
                    {1, 2, dims.ny * dims.channels, dims.channels})) {
  F_ = ob::allocate(image_);
  P_ = ob::allocate(image_);
  E_ = ob::allocate(image_);
  zeros_ = ob::allocate(image_);
  ob::fill_floats(zeros_, 0.0f);
  build_step(dims.channels / 2);
}

Program Field::reset(const memory& F0_user) const {
  Program program = copies({{F0_user, F_}, {zeros_, P_}});
  program.add(
      eltwise(algorithm::eltwise_linear, F_, E_, static_cast<float>(kHalfDt * ref::kSpring)));
  return program;
}

Program Field::copy_to(const memory& F_copy, const memory& P_copy) const {
  return copies({{F_, F_copy}, {P_, P_copy}});
}

Program Field::copy_from(const memory& F_copy, const memory& P_copy) const {
  return copies({{F_copy, F_}, {P_copy, P_}});
}

void Field::build_step(int64_t channels) {
  const double diffusion = ref::kHbar * ref::kHbar / (2 * ref::kMass);
  const float side = static_cast<float>(kHalfDt * diffusion);
  const float centre = static_cast<float>(kHalfDt * (-4 * diffusion - ref::kSpring));
  std::vector<float> taps;
  for (int64_t c = 0; c < channels; ++c)
    taps.insert(taps.end(), {0, side, 0, side, centre, side, 0, side, 0});
  const memory user_weights = upload(dense({channels, 1, 1, 3, 3}), taps);  // goihw, depthwise
  const memory::desc any_weights({channels, 1, 1, 3, 3}, memory::data_type::f32,
                                 memory::format_tag::any);
  const PostOps kick = PostOps().sum().binary(algorithm::binary_add, E_);
  const auto conv = convolution_pd(image_, any_weights, image_, 1, kick.attr());
  weights_ = converted(user_weights, conv.weights_desc());
  const Args kick_args =
      kick.with({{DNNL_ARG_SRC, F_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, P_}});
  const memory::desc flat = dense({1, size_});
  const memory F_flat = view(F_, flat, 0), P_flat = view(P_, flat, 0);
  step_.add(Execution(conv, kick_args));
  step_.add(binary(algorithm::binary_mul, P_flat,
                   upload(dense({1, 1}), {static_cast<float>(ref::kDt / ref::kMass)}), F_flat,
                   PostOps().binary(algorithm::binary_add, F_flat)));
  step_.add(Execution(conv, kick_args));
}

// ---- one run_window ------------------------------------------------------------------------------

WindowPlan::WindowPlan(const pb::VariantContext& context)
    : eager(!context.has(pb::suites::trainer2::kInPlace)),
      batched_metrics(context.has(pb::suites::trainer2::kBatchedMetrics)),
      speed_once(context.has(pb::suites::trainer2::kFusedLiorSpd)),
      fused_retrieval(context.has(pb::suites::trainer2::kJitFusion)),
      hoisted_batch(context.has(pb::suites::trainer2::kHoistedRetrievalBatch)),
      last_step_act(context.has(pb::suites::trainer2::kLastStepAct)),
      deferred_metrics(context.has(pb::suites::trainer2::kDeferredMetrics)) {}

WindowProgram::WindowProgram(const ref::WindowDims& dims, const WindowPlan& plan,
                             const WindowInputs& in, const Field& field)
    : dims_(dims), plan_(plan), in_(in), field_(field), arrays_(plan.eager) {
  const int64_t W = dims.steps;
  std::vector<float> counts;
  for (int64_t t = 1; t <= W; ++t) counts.push_back(static_cast<float>(t));
  counts_ = upload(dense({W}), counts);  // the divisors t of the progress metrics (device values)
  zeros_ = filled({dims.batch, kN}, 0.0f);
  scalars_ = ob::allocate(ob::dense({1, 3}));
  vbar_ = ob::allocate(ob::dense({dims.batch, kN}));
  path_ = ob::allocate(ob::dense({W, ref::kPathColumns}));
  metrics_log_ = ob::allocate(ob::dense({W, 3}));
  host_log_.assign(static_cast<size_t>(W * 3), kNaN);
  build_curvature();
  build_batch_and_query();
  build_retrieval_step();
  build_lior_step();
  build_accumulation();
  build_path_and_progress();
  build_finish();
}

void WindowProgram::run() {
  begin_window();
  for (int64_t t = 0; t < dims_.steps; ++t) step(t);
  if (plan_.deferred_metrics)
    ob::read_floats_to_host(metrics_log_, host_log_.data(), host_log_.size());
  finish_();
}

void WindowProgram::poison() {
  for (const memory& array : {scalars_, vbar_, path_, retrieval_.act}) ob::fill_floats(array, kNaN);
  std::fill(host_log_.begin(), host_log_.end(), kNaN);
}

memory WindowProgram::q_rows(int64_t first, int64_t count) {
  return q_buffer_->view(dense({count, kN}), first * kN);
}

memory WindowProgram::q_state_rows(int64_t first, int64_t count) {
  return q_state_->view(dense({count, dims_.state_dim}), first * dims_.state_dim);
}

// Step 1: R = mean |F| and its broadcast to the batch (row 0 of the metrics stack).
void WindowProgram::build_curvature() {
  const int64_t B = dims_.batch, half = field_.size() / 2;
  RenewableMemory& squares = arrays_.add(field_.image_desc());
  RenewableMemory& modulus = arrays_.add(dense({1, half}));
  RenewableMemory& R = arrays_.add(dense({1, 1}));
  stack_ = &arrays_.add(dense({3, B}));  // rows: R_b, dlior, s (for the metrics)
  R_column_ = stack_->view(dense({B, 1}), 0);
  R_cube_ = stack_->view(dense({B, 1, 1}), 0);
  curvature_.add(eltwise(algorithm::eltwise_square, field_.F(), squares.get()));
  curvature_.add(binary(algorithm::binary_add, squares.view(dense({1, half}), 0),
                        squares.view(dense({1, half}), half), modulus.get(),
                        PostOps().eltwise(algorithm::eltwise_sqrt)));
  curvature_.add(reduce(algorithm::reduction_mean, modulus.get(), R.get()));
  curvature_.add(copy(R.view(strided({1, B}, {1, 0})), stack_->view(dense({1, B}), 0)));
}

// Steps 2 and 3. The batch: q_state = mean_T O (a matmul with a row of ones, then × 1/T), q = its
// first n columns (copied to a dense array: oneDNN 2.6 runs binaries with a strided operand in
// its reference implementation, much slower on the per-step [B,n] ops that read v = q), and the
// candidates concat_K(O, bank) as reorders (the bank repeated over the batch through a stride-0
// view). The query: v = q; query = rotor_apply(q + nu, θ) as a matmul with the rotor's matrix.
void WindowProgram::build_batch_and_query() {
  const int64_t B = dims_.batch, T = dims_.tokens, d = dims_.state_dim, C = dims_.bank_rows;
  const int64_t K = dims_.candidates();
  q_state_ = &arrays_.add(dense({B, 1, d}));
  q_buffer_ = &arrays_.add(dense({B, kN}));
  q_ = q_buffer_->get();
  Program& program = batch_and_query_;
  program.add(matmul(filled({B, 1, T}, 1.0f), in_.O, q_state_->get(),
                     PostOps().eltwise(algorithm::eltwise_linear, 1.0f / static_cast<float>(T))));
  program.add(copy(q_state_->view(strided({B, kN}, {d, 1})), q_));
  cand_coord_ = &arrays_.add(dense({B, K, kN}));
  cand_state_ = &arrays_.add(dense({B, K, d}));
  program.add(copy(view(in_.O, strided({B, T, kN}, {T * d, d, 1}), 0),
                   cand_coord_->view(strided({B, T, kN}, {K * kN, kN, 1}), 0)));
  program.add(copy(view(in_.bank_coord, strided({B, C, kN}, {0, kN, 1}), 0),
                   cand_coord_->view(strided({B, C, kN}, {K * kN, kN, 1}), T * kN)));
  program.add(copy(in_.O, cand_state_->view(strided({B, T, d}, {K * d, d, 1}), 0)));
  program.add(copy(view(in_.bank_state, strided({B, C, d}, {0, d, 1}), 0),
                   cand_state_->view(strided({B, C, d}, {K * d, d, 1}), T * d)));
  memory shifted = q_;
  if (in_.nudge) {
    shifted = arrays_.make(dense({B, kN}));
    program.add(binary(algorithm::binary_add, q_, *in_.nudge, shifted));
  }
  const memory rotor = arrays_.make(dense({kN, kN}));
  program.append(rotor_matrix(in_.theta, rotor));
  query_rotated_ = &arrays_.add(dense({B, kN}));
  program.add(matmul(shifted, rotor, query_rotated_->get()));
}

// Step 4.
void WindowProgram::build_retrieval_step() {
  const int64_t B = dims_.batch;
  retrieval_ = build_retrieval(plan_.fused_retrieval, query_rotated_->view(dense({B, 1, kN})),
                               cand_coord_->get(), *cand_state_, in_.g, R_cube_, arrays_);
}

// Step 5: s (once more for the metrics without fused_lior_spd) and dlior = R s, into the stack.
void WindowProgram::build_lior_step() {
  const int64_t B = dims_.batch;
  const memory dlior = stack_->view(dense({B, 1}), B);
  const memory metrics_s = stack_->view(dense({B, 1}), 2 * B);
  lior_ = lior_step(q_, in_.g, R_column_, dlior, metrics_s, plan_.speed_once,
                    QuadraticForm::WeightFirst, arrays_)
              .program;
}

// Step 6: the means of the stack's rows, the metric sums and vel_acc.
void WindowProgram::build_accumulation() {
  const int64_t B = dims_.batch;
  means_ = &arrays_.add(dense({1, 3}));  // mean R, mean dlior, mean s
  const bool in_place = !plan_.eager;
  velocity_.emplace(dense({B, kN}), in_place);
  metric_sums_.reserve(3);
  if (plan_.batched_metrics) {
    metric_sums_.emplace_back(dense({1, 3}), in_place);
    means_step_.add(reduce(algorithm::reduction_mean, stack_->get(), means_->view(dense({3, 1}))));
    accumulate_.add(binary(algorithm::binary_add, metric_sums_[0].value(),
                           means_->view(dense({1, 3})), metric_sums_[0].target()));
  } else {  // as the original: three means, three sums
    for (int64_t i = 0; i < 3; ++i) {
      metric_sums_.emplace_back(dense({1, 1}), in_place);
      const memory mean = means_->view(dense({1, 1}), i);
      means_step_.add(reduce(algorithm::reduction_mean, stack_->view(dense({1, B}), i * B), mean));
      accumulate_.add(
          binary(algorithm::binary_add, metric_sums_[i].value(), mean, metric_sums_[i].target()));
    }
  }
  accumulate_.add(binary(algorithm::binary_add, velocity_->value(), q_, velocity_->target()));
  // The sums start at zero (a copy: the original creates them as zeros).
  reset_.add(copy(zeros_, velocity_->target()));
  for (const Accumulator& sums : metric_sums_)
    reset_.add(copy(view(zeros_, sums.target().get_desc()), sums.target()));
}

// Steps 7 and 8 of step t: the path row, and the progress metrics (sums / t).
void WindowProgram::build_path_and_progress() {
  const int64_t W = dims_.steps, columns = ref::kPathColumns;
  const memory means_R_dlior = means_->view(dense({1, 2}), 0);
  progress_ = &arrays_.add(dense({1, 3}));
  for (int64_t t = 0; t < W; ++t) {
    const memory mean_v = view(path_, dense({1, kN}), t * columns);
    Program path;
    path.add(reduce(algorithm::reduction_mean, q_, mean_v));
    path.add(copy(means_R_dlior, view(path_, dense({1, 2}), t * columns + kN)));
    path.add(reduce(algorithm::reduction_norm_lp_sum, mean_v,
                    view(path_, dense({1, 1}), t * columns + kN + 2), {}, 2.0f));
    path_rows_.push_back(std::move(path));
    std::vector<Execution> progress;
    if (!plan_.batched_metrics) {
      for (int64_t i = 0; i < 3; ++i)
        progress.push_back(binary(algorithm::binary_div, metric_sums_[i].value(), count(t),
                                  progress_->view(dense({1, 1}), i)));
    } else {
      const memory destination =
          plan_.deferred_metrics ? view(metrics_log_, dense({1, 3}), 3 * t) : progress_->get();
      progress.push_back(
          binary(algorithm::binary_div, metric_sums_[0].value(), count(t), destination));
    }
    progress_steps_.push_back(std::move(progress));
  }
  for (int64_t i = 0; i < 3; ++i) progress_entries_.push_back(progress_->view(dense({1, 1}), i));
}

// The window's results: the sums / W.
void WindowProgram::build_finish() {
  const memory steps = count(dims_.steps - 1);
  if (plan_.batched_metrics) {
    finish_.add(binary(algorithm::binary_div, metric_sums_[0].value(), steps, scalars_));
  } else {
    for (int64_t i = 0; i < 3; ++i)
      finish_.add(binary(algorithm::binary_div, metric_sums_[i].value(), steps,
                         view(scalars_, dense({1, 1}), i)));
  }
  finish_.add(binary(algorithm::binary_div, velocity_->value(), steps, vbar_));
}

void WindowProgram::begin_window() {
  update_accumulators(reset_);
  if (plan_.hoisted_batch) batch_and_query_();
}

void WindowProgram::step(int64_t t) {
  arrays_.begin_step();
  curvature_();
  if (!plan_.hoisted_batch) batch_and_query_();
  if (!plan_.last_step_act || t == dims_.steps - 1) retrieval_.program();
  lior_();
  means_step_();
  update_accumulators(accumulate_);
  path_rows_[t]();
  report_progress(t);
  field_.step()();
}

// `update` writes every accumulator's target(): out of place, each gets fresh storage first.
void WindowProgram::update_accumulators(const Program& update) {
  velocity_->before_update();
  for (Accumulator& sums : metric_sums_) sums.before_update();
  update();
  velocity_->after_update();
  for (Accumulator& sums : metric_sums_) sums.after_update();
}

// Step 8: the host reads the progress metrics: one read per metric (as the original), one per
// step (batched_metrics), or none here and one per window in run() (deferred_metrics).
void WindowProgram::report_progress(int64_t t) {
  const std::vector<Execution>& divisions = progress_steps_[t];
  if (!plan_.batched_metrics) {
    for (size_t i = 0; i < divisions.size(); ++i) {
      divisions[i]();
      ob::read_floats_to_host(progress_entries_[i], &host_log_[3 * t + i], 1);
    }
    return;
  }
  divisions[0]();
  if (!plan_.deferred_metrics) ob::read_floats_to_host(progress_->get(), &host_log_[3 * t], 3);
}

void add_window_outputs(pb::ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims,
                        const WindowProgram& window, const memory& F, const memory& P,
                        const std::vector<int64_t>& field_shape) {
  float scalars[3];  // R, lior, spd
  ob::read_floats_to_host(window.scalars(), scalars, 3);
  out[prefix + "R"] = pb::HostArray::scalar(scalars[0]);
  out[prefix + "lior"] = pb::HostArray::scalar(scalars[1]);
  out[prefix + "spd"] = pb::HostArray::scalar(scalars[2]);
  out[prefix + "act"] = download(window.act(), {dims.batch, dims.state_dim});
  out[prefix + "vbar"] = download(window.vbar(), {dims.batch, kN});
  out[prefix + "path"] = download(window.path(), {dims.steps, ref::kPathColumns});
  std::vector<float> progress;  // the suite's order: lior, R, spd
  const std::vector<float>& read = window.host_progress();
  for (size_t t = 0; t + 2 < read.size(); t += 3) progress.insert(progress.end(), {read[t + 1], read[t], read[t + 2]});
  out[prefix + "progress"] = pb::HostArray::from_floats({dims.steps, 3}, progress.data(), static_cast<int64_t>(progress.size()));
  out[prefix + "F"] = download(F, field_shape);
  out[prefix + "P"] = download(P, field_shape);
}

}  // namespace pb::onednn_backend::trainer2
