#pragma once
// The GPU's roofline probe (device_probe.cu), run once per physical GPU by the harness through the
// cuda backend's hooks and cached (harness/src/roofline/roofline_devices.cpp):
//   memory  a STREAM triad a[i] = b[i] + s * c[i] over three arrays, each 8x the L2 (at least
//           256 MiB), one sweep per launch; counted as STREAM counts it: 3 x 4 bytes per element
//   L2      the same triad over half the L2, many sweeps per launch, each sweep's indices rotated
//           by a few blocks' worth, so an SM reads other lines than it just did (not its L1)
//   fp32    kFmaChains independent FMA chains per thread, 8 blocks of 256 threads per SM
//   bf16    cublasGemmStridedBatchedEx (batch 1), CUDA_R_16BF operands, fp32 accumulation and
//           output, M = N = K = 8192: the tensor cores
// Each kernel is timed with CUDA events, best of kTimedLaunches after one warm-up launch (the
// device can reach the best). This header is plain C++: the per-element bodies and the bytes and
// flops counted per launch are host functions too, so host tests run them. The kernels themselves
// have never run on a GPU in this project yet (docs/roofline.md, "GPU ceilings").

#include <cmath>
#include <cstdint>
#include <string>

#include "backends/cuda/host_device.hpp"
#include "phasebench/device_ceilings.hpp"

namespace pb::cuda_backend::probe {

/// The probe and its version: part of the cache file's name, so a changed probe measures again.
constexpr const char* kProbeMethod = "cuda_triad_fma_cublas_bf16_v1";
constexpr int kTimedLaunches = 10;
constexpr unsigned kBlock = 256;
constexpr int kFmaChains = 8;          // independent chains per thread: covers the FMA latency
constexpr int kFmaBlocksPerSm = 8;     // 2048 threads per SM: every warp scheduler kept busy
constexpr int kFmaSteps = 16384;       // per chain and launch: about a millisecond on an H100
constexpr int kGemmSize = 8192;
constexpr double kMinMemoryArrayBytes = 256.0 * (1 << 20);
constexpr int kL2RotationBlocks = 97;  // blocks' worth each L2 sweep's indices move by

// ---- per-element bodies (kernel and host) -------------------------------------------------------

/// STREAM's triad for one element.
PB_HOST_DEVICE inline float triad_value(float b, float c, float scalar) { return b + scalar * c; }

/// The element that grid-stride position `position` handles in a sweep whose indices are rotated
/// by `offset` (0 <= offset < floats): each sweep touches every element exactly once.
PB_HOST_DEVICE inline int64_t rotated_index(int64_t position, int64_t offset, int64_t floats) {
  const int64_t index = position + offset;
  return index < floats ? index : index - floats;
}

/// How far sweep `sweep`'s indices are rotated: kL2RotationBlocks blocks further each sweep.
PB_HOST_DEVICE inline int64_t sweep_offset(int sweep, unsigned block, int64_t floats) {
  return static_cast<int64_t>(sweep) * block * kL2RotationBlocks % floats;
}

/// One thread of the fp32 kernel: kFmaChains chains acc = acc * multiplier + addend, `steps`
/// steps each, then their sum (stored, so no chain is dead code).
PB_HOST_DEVICE inline float fma_chains(float seed, float multiplier, float addend, int steps) {
  float acc[kFmaChains];
  for (int chain = 0; chain < kFmaChains; ++chain) acc[chain] = seed + static_cast<float>(chain);
  // Unrolled on the device: the loop's own instructions would otherwise take FMA issue slots.
#if defined(__CUDA_ARCH__)
#pragma unroll 16
#endif
  for (int step = 0; step < steps; ++step) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int chain = 0; chain < kFmaChains; ++chain) acc[chain] = fmaf(acc[chain], multiplier, addend);
  }
  float sum = 0.0f;
  for (int chain = 0; chain < kFmaChains; ++chain) sum += acc[chain];
  return sum;
}

// ---- what one launch moves and computes -----------------------------------------------------------

/// Bytes one triad launch moves: three arrays of `floats` floats per sweep (the write-allocate
/// read of `a` not counted, as STREAM does).
inline double triad_bytes(int64_t floats, int sweeps) { return 3.0 * sizeof(float) * double(floats) * sweeps; }
/// Flops one fp32 launch computes: one FMA (2 flops) per chain and step per thread.
inline double fma_flops(int64_t threads, int steps) { return 2.0 * kFmaChains * double(steps) * double(threads); }
/// Flops of one M x N x K GEMM.
inline double gemm_flops(int m, int n, int k) { return 2.0 * m * double(n) * k; }

/// Floats per array of the memory triad: 8x the L2 each (at least kMinMemoryArrayBytes), at most
/// a sixth of the free memory each (the three take half), a multiple of kBlock. 0 when that is
/// not even 2x the L2: the data would partly stay in it.
inline int64_t memory_array_floats(double l2_bytes, double free_bytes) {
  const double wanted = std::fmax(8 * l2_bytes, kMinMemoryArrayBytes), room = free_bytes / 6;
  const int64_t floats = static_cast<int64_t>(std::fmin(wanted, room) / sizeof(float)) / kBlock * kBlock;
  return double(floats) * sizeof(float) >= 2 * l2_bytes ? floats : 0;
}

/// Floats per array of the L2 triad: the three together half the L2, a multiple of kBlock.
inline int64_t l2_array_floats(double l2_bytes) {
  return static_cast<int64_t>(l2_bytes / 2 / 3 / sizeof(float)) / kBlock * kBlock;
}

/// Sweeps per L2 launch: about 1 GB moved, so a launch takes far longer than its overhead.
inline int l2_sweeps(int64_t floats) {
  return floats > 0 ? static_cast<int>(std::fmax(1.0, 1e9 / triad_bytes(floats, 1))) : 0;
}

/// "GPU-8f2c4d1e-...": the UUID as nvidia-smi writes it; empty when it is all zero (unknown).
inline std::string uuid_text(const unsigned char (&bytes)[16]) {
  std::string text = "GPU-";
  bool known = false;
  for (int i = 0; i < 16; ++i) {
    static const char kHex[] = "0123456789abcdef";
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += kHex[bytes[i] >> 4];
    text += kHex[bytes[i] & 15];
    known = known || bytes[i] != 0;
  }
  return known ? text : "";
}

// ---- the probe (device_probe.cu) --------------------------------------------------------------------

/// Device 0's model and identity, or why there is none (the runtime's own text). Cheap.
DeviceIdentity identify_device();
/// Runs the probe on device 0 (a few seconds). Never throws: a failure is why_not. The bf16 peak
/// alone may be missing (bf16_method then says why).
DeviceProbe measure_ceilings();

}  // namespace pb::cuda_backend::probe
