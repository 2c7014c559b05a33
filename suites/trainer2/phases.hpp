#pragma once
// The phase catalog of seed 000 (docs/trainer2.md), shared by the trainer2 workloads: each picks
// the phases that apply to it. Claims are the seed's per-phase gains as time
// ratios; phases after 7 go beyond the seed, must stay exact, and claim nothing.

#include <vector>

#include "phasebench/workload.hpp"

namespace pb::suites::trainer2 {

// The optimization each phase adds, by the name variants ask `context.has(...)` for.
inline constexpr const char* kBaseline = "baseline";
inline constexpr const char* kBatchedMetrics = "batched_metrics";
inline constexpr const char* kVectorizedRotor = "vectorized_rotor";
inline constexpr const char* kFusedLiorSpd = "fused_lior_spd";
inline constexpr const char* kJitFusion = "jit_fusion";
inline constexpr const char* kAdaptiveCleanup = "adaptive_cleanup";
inline constexpr const char* kInPlace = "inplace";
inline constexpr const char* kGraphCapture = "graph_capture";
inline constexpr const char* kHoistedRetrievalBatch = "hoisted_retrieval_batch";
inline constexpr const char* kLastStepAct = "last_step_act";
inline constexpr const char* kDeferredMetrics = "deferred_metrics";
inline constexpr const char* kTemporalBlocking = "temporal_blocking";
// trainer2/rotor_update only: on a host, the update on the calling thread.
inline constexpr const char* kCallingThreadRotor = "calling_thread_rotor";
// trainer2/lior_step only (its catalog is lior_step.cpp's): the quadratic form fused.
inline constexpr const char* kFusedQuadraticForm = "fused_quadratic_form";
// trainer2/lior_step only: s, dlior and the three sums in one pass over the rows.
inline constexpr const char* kSinglePassLior = "single_pass_lior";
// trainer2/window and train_step, on host cores: temporal_blocking's kernels as SIMD code.
inline constexpr const char* kVectorizedWindow = "vectorized_window";
// trainer2/retrieval, on host cores: jit_fusion's kernel as SIMD code, act's row kept in
// registers across blocks of 8 candidates.
inline constexpr const char* kVectorizedRetrieval = "vectorized_retrieval";

inline PhaseInfo trainer2_phase(int index) {
  switch (index) {
    case 0:
      return {0, kBaseline,
              "as the original: 3 host reads of the progress metrics per step, s computed twice, "
              "out-of-place accumulation, per-pair host reads in the rotor update, retrieval batch "
              "rebuilt each step"};
    case 1:
      return PhaseInfo(1, kBatchedMetrics, "the 3 progress metrics gathered on the device, read with one transfer")
          .claims(1.03, 1.05);
    case 2:
      return PhaseInfo(2, kVectorizedRotor, "rotor update with gathered indices and one index_add, no host reads")
          .claims(1.02, 1.03);
    case 3:
      return PhaseInfo(3, kFusedLiorSpd, "s computed once and returned with dlior").claims(1.02, 1.03);
    case 4:
      return PhaseInfo(4, kJitFusion,
                       "the retrieval step compiled as one fused function (TorchScript for LibTorch; one "
                       "kernel elsewhere)")
          .claims(1.01, 1.02);
    case 5:
      return PhaseInfo(5, kAdaptiveCleanup,
                       "allocator cache emptied only when device memory use > 90% and every 50 windows")
          .claims(1.01, 1.02)
          .needing({Capability::CachingAllocator});
    case 6:
      return PhaseInfo(6, kInPlace, "vel_acc accumulated in place; buffers preallocated").claims(1.0, 1.01);
    case 7:
      return PhaseInfo(7, kGraphCapture, "the whole window captured once as a device graph after warm-up and replayed")
          .claims(1.15, 1.25)
          .needing({Capability::GraphCapture});
    case 8:
      return {8, kHoistedRetrievalBatch,
              "beyond the seed: the retrieval batch (query, candidates) depends only on the "
              "window's fixed inputs, so it is built once per window"};
    case 9:
      return {9, kLastStepAct,
              "beyond the seed: the state mixing act = sum w cand_state runs only for the last "
              "step, the only one whose act is returned"};
    case 10:
      return {10, kDeferredMetrics,
              "beyond the seed: each step's progress metrics are written to a [W,3] device buffer "
              "and read with one transfer per window (the same log, delivered at the window's end)"};
    case 11:
      return {11, kTemporalBlocking,
              "beyond the seed: with the metrics deferred, the per-step LIoR math moves after the "
              "loop and the whole window's field runs as one kernel, blocks of channels kept in "
              "cache for all W steps (the channels never interact)"};
    case 12:
      return {12, kCallingThreadRotor,
              "beyond the seed (rotor_update, on a host): the copy of the input angles and the 8 slot "
              "updates in one kernel on the calling thread (Kokkos::Serial): a parallel region's fork "
              "and join cost more than the whole update"};
    case 13:
      return {13, kVectorizedWindow,
              "beyond the seed (window and train_step, on host cores): temporal_blocking's two heavy "
              "kernels as SIMD code compiled for AVX-512, AVX2 and the baseline: the field in blocks of "
              "32 channels, two steps per sweep, sum |F_t| from the step's own loads; the last step's "
              "retrieval with vectorized exponentials and each bank row read once per 4 batch rows"};
    case 14:
      return {14, kVectorizedRetrieval,
              "beyond the seed (retrieval, on host cores): jit_fusion's kernel as SIMD code compiled for "
              "AVX-512, AVX2 and the baseline, one batch row per work item: vectorized exponentials, and "
              "the mixing over blocks of 8 candidates whose partial sums stay in registers, so act's row "
              "is loaded and stored once per 8 candidate rows instead of once per row (same order, same "
              "floats)"};
  }
  return {index, "unknown", ""};
}

inline std::vector<PhaseInfo> trainer2_phases(const std::vector<int>& indices) {
  std::vector<PhaseInfo> phases;
  for (int index : indices) phases.push_back(trainer2_phase(index));
  return phases;
}

/// The seed's whole-ladder claim: 1.10-1.15x without CUDA graphs (1.25-1.40x with them).
inline PhaseInfo trainer2_cumulative_claim() {
  PhaseInfo claim;
  claim.name = "seed 000: 1.10-1.15x per window without graphs, 1.25-1.40x with graphs";
  claim.claimed_min = 1.10;
  claim.claimed_max = 1.15;
  return claim;
}

}  // namespace pb::suites::trainer2
