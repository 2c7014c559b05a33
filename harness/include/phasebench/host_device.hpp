#pragma once
// PB_HOST_DEVICE marks a function that runs in a CUDA kernel and on the host: nvcc compiles it for
// both, a plain C++ compiler sees an ordinary inline function. Per-element math that the fp64
// oracle (reference/) and device code share is written once this way, so a host test runs the very
// code a kernel runs (docs/gpu.md, "CUDA without a GPU"). It lives in the harness, not in
// backends/cuda/, because the oracle includes nothing from a backend.

#ifndef PB_HOST_DEVICE
#if defined(__CUDACC__)
#define PB_HOST_DEVICE __host__ __device__
#else
#define PB_HOST_DEVICE
#endif
#endif

// PB_IVDEP, before a host loop: no iteration reads what another wrote, which GCC cannot prove
// through several pointers (an output never overlaps an input, or a row is normalized in place
// element by element); told, it vectorizes without run-time overlap checks. Nothing under nvcc or
// clang, which do not know GCC's pragma.
#ifndef PB_IVDEP
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define PB_IVDEP _Pragma("GCC ivdep")
#else
#define PB_IVDEP
#endif
#endif
