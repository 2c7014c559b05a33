#pragma once
// CublasGemm: a cuBLAS handle bound to one stream, running GemmShape (backends/cuda/gemm.hpp)
// with fp32 or bf16 operands and fp32 accumulation and output. Plain C++ against cuBLAS's C API.
//
// Construct one only once a device is known to be available (a variant's setup(), after
// support() said yes). Each call is queued on the stream (capturable into a CUDA graph: the
// handle has a workspace of its own, allocated here, so cuBLAS allocates nothing while capturing)
// and notes one dispatched op. Destroy it before the stream.

#include <cublas_v2.h>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/gemm.hpp"

namespace pb::cuda_backend {

class CublasGemm {
 public:
  explicit CublasGemm(cudaStream_t stream);
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  /// cublasGemmStridedBatchedEx, CUDA_R_32F operands, CUBLAS_COMPUTE_32F (no TF32: the handle
  /// keeps CUBLAS_DEFAULT_MATH).
  void operator()(const GemmShape& shape, const float* a, const float* b, float* c) const;
  /// cublasGemmStridedBatchedEx, CUDA_R_16BF operands, CUDA_R_32F output, CUBLAS_COMPUTE_32F.
  void operator()(const GemmShape& shape, const Bf16* a, const Bf16* b, float* c) const;

 private:
  void run(const GemmShape& shape, const void* a, const void* b, cudaDataType operands, float* c) const;

  cublasHandle_t handle_ = nullptr;
  DeviceBuffer<unsigned char> workspace_;
};

}  // namespace pb::cuda_backend
