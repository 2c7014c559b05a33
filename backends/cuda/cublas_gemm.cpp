// CublasGemm (cublas_gemm.hpp): the handle's life and the one cuBLAS call it makes.

#include "cublas_gemm.hpp"

#include <stdexcept>
#include <string>

#include "phasebench/counters.hpp"

namespace pb::cuda_backend {
namespace {

// cuBLAS's recommendation for Hopper and newer (4 MiB suffices before); allocated once.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(status) + " (" +
                             cublasGetStatusName(status) + ")");
}

cublasOperation_t operation(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

CublasGemm::CublasGemm(cudaStream_t stream) : workspace_(kWorkspaceBytes) {
  check_cublas(cublasCreate(&handle_), "cublasCreate");
  try {
    check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
    check_cublas(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()), "cublasSetWorkspace");
    check_cublas(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

CublasGemm::~CublasGemm() {
  if (handle_ != nullptr) cublasDestroy(handle_);  // waits for the handle's queued work
}

void CublasGemm::operator()(const GemmShape& shape, const float* a, const float* b, float* c) const {
  run(shape, a, b, CUDA_R_32F, c);
}

void CublasGemm::operator()(const GemmShape& shape, const Bf16* a, const Bf16* b, float* c) const {
  run(shape, a, b, CUDA_R_16BF, c);
}

void CublasGemm::run(const GemmShape& shape, const void* a, const void* b, cudaDataType operands, float* c) const {
  const float alpha = 1.f, beta = 0.f;
  check_cublas(cublasGemmStridedBatchedEx(handle_, operation(shape.transpose_a), operation(shape.transpose_b), shape.m,
                                          shape.n, shape.k, &alpha, a, operands, shape.lda, shape.stride_a, b, operands,
                                          shape.ldb, shape.stride_b, &beta, c, CUDA_R_32F, shape.ldc, shape.stride_c,
                                          shape.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
  counters::note_ops(1);
}

}  // namespace pb::cuda_backend
