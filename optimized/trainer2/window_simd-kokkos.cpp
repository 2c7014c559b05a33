// trainer2's vectorized_window on Kokkos host spaces: the field of a window, one channel
// block per work item, and the last step's retrieval (its weights by batch row, its mixing by
// group of batch rows), by the host code of window_simd_bodies.hpp compiled for AVX-512, AVX2 and
// the baseline (host_vectorization.hpp). Used by WindowRunner (trainer2_engine_window-kokkos.hpp)
// for trainer2/window and trainer2/train_step.

#include <stdexcept>
#include <string>

#include "backends/kokkos/host_vectorization.hpp"
#include "optimized/trainer2/trainer2_engine_window-kokkos.hpp"
#include "optimized/trainer2/window_simd_bodies.hpp"

namespace pb::kokkos_backend::trainer2 {
namespace {

// The field's blocks handed out one at a time: a block is a short piece of one thread's work, and
// with a static split a thread that the OS preempts holds the whole kernel back.
using DynamicRange = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int64_t>, Kokkos::Schedule<Kokkos::Dynamic>>;

#ifdef PB_KOKKOS_KERNELS_ON_HOST

// WindowRunner sizes the per-block sums Σ |F_t| by field_window's blocks; this field must have as many.
static_assert(kFieldBlock == ws::kBlock, "vectorized_window's field blocks must be field_window's");

#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void run_block_cloned(const ws::Grid& grid, int64_t steps,
                                         const float* F_start,
                                         const float* F_eq, float* F_out,
                                         float* P_out, float* partial,
                                         int64_t block, float* scratch) {
  ws::run_block(grid, steps, F_start, F_eq, F_out, P_out, partial, block, scratch);
}
PB_HOST_ISA_CLONES void retrieval_weights_cloned(
    const ws::Candidates& candidates, int64_t b, const float* query, const float* metric, float curvature,
    float* weights) {
  ws::retrieval_weights(candidates, b, query, metric, curvature, weights);
}
PB_HOST_ISA_CLONES void retrieval_mix_cloned(const ws::Candidates& candidates,
                                             int64_t batch,
                                             const float* weights,
                                             int64_t group, float* act) {
  ws::retrieval_mix(candidates, batch, weights, group, act);
}
#define PB_T2_RUN_FIELD_BLOCK run_block_cloned
#define PB_T2_RETRIEVAL_WEIGHTS retrieval_weights_cloned
#define PB_T2_RETRIEVAL_MIX retrieval_mix_cloned
#else
#define PB_T2_RUN_FIELD_BLOCK ws::run_block
#define PB_T2_RETRIEVAL_WEIGHTS ws::retrieval_weights
#define PB_T2_RETRIEVAL_MIX ws::retrieval_mix
#endif

/// One channel block of the window's field per work item (each in its own share of the scratch).
struct FieldBlocks {
  ws::Grid grid;
  int64_t steps;
  const float* F_start;
  const float* F_eq;
  float* F_out;
  float* P_out;
  float* partial;
  float* scratch;
  void operator()(int64_t block) const {
    PB_T2_RUN_FIELD_BLOCK(grid, steps, F_start, F_eq, F_out, P_out, partial, block, scratch);
  }
};

/// The retrieval's weights, one batch row per work item.
struct RetrievalWeights {
  ws::Candidates candidates;
  const float* query;  // [B, n]
  const float* metric;
  const float* curvature;  // [B]
  float* weights;          // [B, K]
  void operator()(int64_t b) const {
    PB_T2_RETRIEVAL_WEIGHTS(candidates, b, query + b * kDim, metric, curvature[b], weights + b * candidates.count());
  }
};

/// The retrieval's mixing, one group of batch rows per work item.
struct RetrievalMix {
  ws::Candidates candidates;
  int64_t batch;
  const float* weights;  // [B, K]
  float* act;            // [B, d]
  void operator()(int64_t group) const { PB_T2_RETRIEVAL_MIX(candidates, batch, weights, group, act); }
};

#else

[[noreturn]] void host_cores_only_error() {
  throw std::logic_error(std::string(pb::suites::trainer2::kVectorizedWindow) +
                         " runs on host cores only (its variant reports UNSUPPORTED here)");
}

#endif  // PB_KOKKOS_KERNELS_ON_HOST

}  // namespace

void field_window_vectorized(const ws::Grid& grid, int64_t steps, const ConstVec& F_start, const ConstVec& F_eq,
                             const Vec& F_out, const Vec& P_out, const Mat& partial, const Vec& scratch) {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
  Kokkos::parallel_for(kFieldWindowLabel, DynamicRange(0, ws::blocks(grid)),
                       FieldBlocks{grid, steps, F_start.data(), F_eq.data(), F_out.data(), P_out.data(), partial.data(),
                                   scratch.data()});
#else
  host_cores_only_error();
#endif
}

void retrieval_vectorized(const InPlaceCandidates& candidates, const ConstMat& q, const ConstVec& g, const ConstVec& R,
                          const Mat& weights, const Mat& act) {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
  const ws::Candidates rows{
      candidates.O.data(),        candidates.bank_coord.data(),        candidates.bank_state.data(),
      candidates.O.extent_int(1), candidates.bank_coord.extent_int(0), candidates.O.extent_int(2)};
  const int64_t batch = act.extent(0);
  Kokkos::parallel_for(kWeightsLabel, RangePolicy(0, batch),
                       RetrievalWeights{rows, q.data(), g.data(), R.data(), weights.data()});
  Kokkos::parallel_for(kFusedRetrievalLabel, RangePolicy(0, ws::mix_groups(batch)),
                       RetrievalMix{rows, batch, weights.data(), act.data()});
#else
  host_cores_only_error();
#endif
}

}  // namespace pb::kokkos_backend::trainer2
