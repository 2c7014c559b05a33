// trainer2/retrieval on CUDA: the retrieval step alone.
//   phase 0 baseline    op by op as the original: displacement, quadratic form, sqrt, cost,
//                       logit, softmax, weighted states, sum over K (8 launches, intermediates
//                       allocated per run as fresh tensors)
//   phase 4 jit_fusion  one block kernel per (row, 32 state columns): logits, softmax and the
//                       state mixing, nothing allocated
// The ladder: RetrievalLadder in trainer2-cuda-ladders.hpp; the bodies: trainer2-cuda.cuh (run on
// the host by tests/cuda/trainer2_cuda_ladders_test.cpp). SKIPPED without a device.

#include "optimized/trainer2/trainer2-cuda-variant.cuh"

namespace pb::cuda_backend {
namespace {

const VariantRegistration registration{"trainer2/retrieval", "cuda", {0, 4},
                                       trainer2::make_ladder_variant<trainer2::RetrievalLadder>};

}  // namespace
}  // namespace pb::cuda_backend
