// trainer2/retrieval on CUDA: the retrieval step alone, op by op as the original (8 launches,
// intermediates allocated per run as fresh tensors) or, with jit_fusion, one block kernel per
// (row, 32 state columns) that computes the logits, the softmax and the state mixing. The ladder:
// RetrievalLadder in trainer2_engine_ladders-cuda.hpp; the bodies: trainer2_engine-cuda.cuh (run
// on the host by tests/cuda/trainer2_cuda_ladders_test.cpp). SKIPPED without a device.

#include "optimized/trainer2/trainer2_engine_variant-cuda.cuh"

namespace pb::cuda_backend {
namespace {

const trainer2::LadderRegistration<trainer2::RetrievalLadder> registration{"trainer2/retrieval"};

}  // namespace
}  // namespace pb::cuda_backend
