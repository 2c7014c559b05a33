// The roofline probe's kernels: a STREAM-style triad for memory bandwidth and an fp32 rate
// measured with oneDNN's sgemm (when this process has oneDNN) or a register-resident FMA kernel.
// Each kernel is repeated until a small time budget is spent and the best repetition counts
// (STREAM's convention: the machine can reach the best; slower ones were disturbed).

#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "phasebench/machine.hpp"
#include "roofline.hpp"

namespace pb::roofline {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kBudgetSeconds = 0.4;  // per ceiling
constexpr int kMinRepetitions = 4;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The best (shortest) time of `run` over repetitions until the budget is spent; the first call
// warms caches, page tables and thread pools and is not counted.
template <typename Run>
double best_seconds(Run&& run) {
  run();
  double best = 1e30;
  const auto start = Clock::now();
  for (int rep = 0; rep < kMinRepetitions || seconds_since(start) < kBudgetSeconds; ++rep) {
    const auto begin = Clock::now();
    run();
    best = std::min(best, seconds_since(begin));
  }
  return best;
}

// Restores the process's OpenMP thread count: LibTorch and oneDNN set their own at init.
class OmpThreads {
 public:
  explicit OmpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

// ---- memory bandwidth ----------------------------------------------------------------------------

// The largest cache of CPU 0 in bytes (the last level), from sysfs; 0 when unknown.
size_t last_level_cache_bytes() {
  size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text)) break;
    size_t value = std::stoul(text);
    if (text.back() == 'K') value <<= 10;
    if (text.back() == 'M') value <<= 20;
    largest = std::max(largest, value);
  }
  return largest;
}

struct Bandwidth {
  double gb_per_s;
  std::string method;
};

// a = b + s * c over three fp64 arrays of 4x the last-level cache each (at least 64 MiB): no
// repetition finds its data in cache. Counted as STREAM counts it, 3 x 8 bytes per element
// (the write-allocate read of `a` is not counted).
Bandwidth measure_bandwidth(int threads) {
  const size_t array_bytes = std::clamp<size_t>(4 * last_level_cache_bytes(), 64 << 20, 1024 << 20);
  const int64_t n = static_cast<int64_t>(array_bytes / sizeof(double));
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  double* pa = a.get();
  const double* pb = b.get();
  const double* pc = c.get();
#pragma omp parallel for schedule(static) num_threads(threads)  // first touch where it is used
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  const double scalar = 3.0;
  const double seconds = best_seconds([&] {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + scalar * pc[i];
  });
  if (a[n / 2] != 7.0) throw std::logic_error("roofline triad computed a wrong value");
  const double gb = 3.0 * static_cast<double>(array_bytes) / 1e9;
  return {gb / seconds, "triad a=b+s*c over 3 x " + std::to_string(array_bytes >> 20) +
                            " MiB fp64 arrays, " + std::to_string(threads) + " threads, best of repetitions"};
}

// ---- compute: oneDNN sgemm -----------------------------------------------------------------------

// dnnl_sgemm's C signature, identical in oneDNN 2.x and 3.x (row-major, dnnl_dim_t = int64_t).
using SgemmFunction = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t,
                              const float*, int64_t, float, float*, int64_t);

// The core must not depend on oneDNN: it looks dnnl_sgemm up in the running process, where it is
// found exactly when the oneDNN backend is linked into this executable.
// PHASEBENCH_ROOFLINE_COMPUTE=kernel forces the FMA kernel (to compare the two, and to test it).
SgemmFunction find_onednn_sgemm() {
  const char* forced = std::getenv("PHASEBENCH_ROOFLINE_COMPUTE");
  if (forced && std::string(forced) == "kernel") return nullptr;
  return reinterpret_cast<SgemmFunction>(dlsym(RTLD_DEFAULT, "dnnl_sgemm"));
}

constexpr int64_t kGemmSize = 1024;

double onednn_sgemm_gflop_per_s(SgemmFunction sgemm) {
  const int64_t n = kGemmSize;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  const double seconds = best_seconds([&] {
    if (sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n) != 0)
      throw std::runtime_error("dnnl_sgemm failed");
  });
  if (c[n + 1] != 0.125f * n) throw std::logic_error("roofline sgemm computed a wrong value");
  return 2.0 * n * n * n / seconds / 1e9;
}

// ---- compute: FMA kernel -------------------------------------------------------------------------

// Ten independent vector accumulators updated by x = x * a + b: enough independent chains to
// cover the FMA latency on two pipes, all in registers (named variables, not an array, which the
// compiler would keep on the stack). The empty asm makes each step's values opaque to the
// compiler, so it can neither skip steps nor move them out of registers.
constexpr int kChains = 10;

template <typename Vector>
__attribute__((always_inline)) inline float fma_chains(int64_t steps) {
  const Vector a = Vector{} + 0.9999999f, b = Vector{} + 1e-7f;
  Vector x0 = Vector{} + 1.0f, x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f, x4 = x0 + 0.4f;
  Vector x5 = x0 + 0.5f, x6 = x0 + 0.6f, x7 = x0 + 0.7f, x8 = x0 + 0.8f, x9 = x0 + 0.9f;
  for (int64_t step = 0; step < steps; ++step) {
    x0 = x0 * a + b, x1 = x1 * a + b, x2 = x2 * a + b, x3 = x3 * a + b, x4 = x4 * a + b;
    x5 = x5 * a + b, x6 = x6 * a + b, x7 = x7 * a + b, x8 = x8 * a + b, x9 = x9 * a + b;
    asm volatile("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3), "+x"(x4), "+x"(x5), "+x"(x6),
                      "+x"(x7), "+x"(x8), "+x"(x9));
  }
  const Vector total = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9;
  float sum = 0.0f;
  for (size_t lane = 0; lane < sizeof(Vector) / sizeof(float); ++lane) sum += total[lane];
  return sum;
}

using Float16 = float __attribute__((vector_size(64)));
using Float8 = float __attribute__((vector_size(32)));
using Float4 = float __attribute__((vector_size(16)));

// One copy per instruction set, so the probe measures the hardware, not the build's flags.
__attribute__((target("avx512f,fma"))) float fma_kernel_avx512(int64_t steps) {
  return fma_chains<Float16>(steps);
}
__attribute__((target("avx2,fma"))) float fma_kernel_avx2(int64_t steps) {
  return fma_chains<Float8>(steps);
}
float mul_add_kernel_sse2(int64_t steps) { return fma_chains<Float4>(steps); }

struct FmaKernel {
  const char* name;
  float (*run)(int64_t);
  int lanes;
};

FmaKernel widest_fma_kernel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
    return {"fma_kernel_avx512", fma_kernel_avx512, 16 * kChains};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"fma_kernel_avx2", fma_kernel_avx2, 8 * kChains};
  return {"mul_add_kernel_sse2", mul_add_kernel_sse2, 4 * kChains};
}

volatile float fma_sink = 0.0f;  // keeps the kernel's result alive

double fma_kernel_gflop_per_s(const FmaKernel& kernel, int threads) {
  constexpr int64_t kSteps = 2'000'000;
  std::vector<float> results(threads, 0.0f);
  int team = threads;  // OpenMP may give fewer threads than asked: count the ones that ran
  const double seconds = best_seconds([&] {
#pragma omp parallel num_threads(threads)
    {
      results[omp_get_thread_num()] = kernel.run(kSteps);
#pragma omp single
      team = omp_get_num_threads();
    }
    fma_sink = results[0];
  });
  return 2.0 * kernel.lanes * static_cast<double>(kSteps) * team / seconds / 1e9;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

std::string compute_method_available() {
  return find_onednn_sgemm() ? "onednn_sgemm" : widest_fma_kernel().name;
}

Ceilings measure(int threads) {
  const auto start = Clock::now();
  OmpThreads scoped_threads(threads);
  Ceilings ceilings;
  ceilings.threads = threads;
  ceilings.fingerprint = hardware_fingerprint();
  ceilings.measured_at = utc_now();
  const Bandwidth bandwidth = measure_bandwidth(threads);
  ceilings.bandwidth_gb_per_s = bandwidth.gb_per_s;
  ceilings.bandwidth_method = bandwidth.method;
  if (const SgemmFunction sgemm = find_onednn_sgemm()) {
    ceilings.peak_gflop_per_s = onednn_sgemm_gflop_per_s(sgemm);
    ceilings.compute_method = "onednn_sgemm";
    ceilings.compute_detail = "dnnl_sgemm M=N=K=" + std::to_string(kGemmSize) + ", " +
                              std::to_string(threads) + " OpenMP threads, best of repetitions";
  } else {
    const FmaKernel kernel = widest_fma_kernel();
    ceilings.peak_gflop_per_s = fma_kernel_gflop_per_s(kernel, threads);
    ceilings.compute_method = kernel.name;
    ceilings.compute_detail = std::to_string(kernel.lanes) + " independent fp32 multiply-add chains "
                              "per thread in registers, " + std::to_string(threads) + " threads";
  }
  ceilings.probe_seconds = seconds_since(start);
  ceilings.source = "measured";
  return ceilings;
}

}  // namespace pb::roofline
