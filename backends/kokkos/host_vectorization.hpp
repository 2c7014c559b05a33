#pragma once
// What the Kokkos variants tell the host compiler so that their inner loops vectorize: one
// definition for every variant that needs it (spinlock's profile_guided, geometry's vectorized
// phases).
//
// PB_IVDEP (phasebench/host_device.hpp), before a loop: no iteration reads what another wrote.
//
// PB_HOST_ISA_CLONES, before a function: the build targets baseline x86-64 (128-bit SSE2), so the
// function is also compiled for x86-64-v3 (AVX2, FMA) and v4 (AVX-512), and the loader picks the
// clone this CPU runs (ifunc). It clones when every kernel runs on the host
// (PB_KOKKOS_KERNELS_ON_HOST) and the compiler is GCC on x86-64, and then PB_KOKKOS_HOST_ISA_CLONES
// is defined (a variant that dispatches to a cloned function only then tests it); elsewhere it is
// empty.

#include <optional>
#include <string>

#include "backends/kokkos/kokkos_backend.hpp"  // Kokkos' macros say which execution spaces exist
#include "phasebench/host_device.hpp"  // PB_IVDEP
#include "phasebench/variant.hpp"

// PB_KOKKOS_KERNELS_ON_HOST: this Kokkos has no device execution space, so every kernel runs on
// host cores and may read Views through their pointers as host code.
#if !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && !defined(KOKKOS_ENABLE_SYCL) && \
    !defined(KOKKOS_ENABLE_OPENMPTARGET)
#define PB_KOKKOS_KERNELS_ON_HOST 1
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(PB_KOKKOS_KERNELS_ON_HOST)
#define PB_KOKKOS_HOST_ISA_CLONES 1
#define PB_HOST_ISA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
// GCC warns (-Wpsabi) that a 64-byte vector argument or result is passed differently with
// AVX-512 than without, for the baseline clone of every function that takes or returns one. The
// clones' vectors never cross such a call: the vectorized bodies are inlined into each clone, and no
// cloned function is called across a library boundary, so the warning cannot apply to this code.
// (GCC 12's note "the ABI for passing parameters with 64-byte alignment has changed in GCC 4.6" is
// not a warning this pragma reaches: the lane functions take their vectors by const reference.)
#pragma GCC diagnostic ignored "-Wpsabi"
#else
#define PB_HOST_ISA_CLONES
#endif

namespace pb::kokkos_backend {

/// support() of a phase written for host cores: none on a Kokkos that runs kernels on the host,
/// else UNSUPPORTED naming `phase`.
inline std::optional<CannotRun> host_cores_only([[maybe_unused]] const std::string& phase) {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
  return std::nullopt;
#else
  return CannotRun{CannotRun::Kind::Unsupported,
                   phase + " is written for host cores; this Kokkos runs kernels on a device"};
#endif
}

/// support() of a phase that writes by x86's non-temporal stores (_mm_stream_ps) from host cores
/// (geometry's streamed_stores): host_cores_only, and UNSUPPORTED naming `phase` without SSE.
inline std::optional<CannotRun> host_streaming_stores_only(const std::string& phase) {
  if (auto host_only = host_cores_only(phase)) return host_only;
#if defined(__SSE__)
  return std::nullopt;
#else
  return CannotRun{CannotRun::Kind::Unsupported, phase + " needs x86's non-temporal stores (SSE)"};
#endif
}

}  // namespace pb::kokkos_backend
