// The roofline probe's kernels: a STREAM-style triad and a read-only sweep, over arrays larger than
// every cache (memory bandwidth) and over arrays that fit each cache level (cache bandwidths), and
// an fp32 rate: a register-resident FMA kernel, and oneDNN's sgemm when this process has oneDNN.
// Each kernel is repeated until a small time budget is spent and the best repetition counts
// (STREAM's convention: the machine can reach the best; slower ones were disturbed). Where two
// kernels measure one ceiling the larger counts: a ceiling a row can beat is no ceiling.

#include <dlfcn.h>
#include <omp.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "phasebench/machine.hpp"
#include "roofline/roofline.hpp"

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
double best_seconds(Run&& run, double budget_seconds = kBudgetSeconds) {
  run();
  double best = 1e30;
  const auto start = Clock::now();
  for (int rep = 0; rep < kMinRepetitions || seconds_since(start) < budget_seconds; ++rep) {
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

// ---- sweep kernels: read-only and triad, one copy per instruction set -------------------------

// Vector types that may alias the float arrays they are read from.
typedef float ReadVector16 __attribute__((vector_size(64), may_alias));
typedef float ReadVector8 __attribute__((vector_size(32), may_alias));
typedef float ReadVector4 __attribute__((vector_size(16), may_alias));

// Arrays handed to the sweeps hold a multiple of this many floats (8 vectors of 16 lanes).
constexpr int64_t kSweepGranule = 128;

// Sums `floats` floats `sweeps` times with 8 independent accumulators (enough to keep two loads a
// cycle going past the add latency). The empty asm with a memory clobber makes every sweep load
// the data again instead of reusing the previous sweep's sum.
template <typename Vector>
__attribute__((always_inline)) inline float read_sweeps(const float* data, int64_t floats, int64_t sweeps) {
  constexpr int64_t lanes = sizeof(Vector) / sizeof(float);
  const Vector* v = reinterpret_cast<const Vector*>(data);
  const int64_t vectors = floats / lanes;
  Vector s0{}, s1{}, s2{}, s3{}, s4{}, s5{}, s6{}, s7{};
  for (int64_t sweep = 0; sweep < sweeps; ++sweep) {
    for (int64_t i = 0; i < vectors; i += 8) {
      s0 += v[i], s1 += v[i + 1], s2 += v[i + 2], s3 += v[i + 3];
      s4 += v[i + 4], s5 += v[i + 5], s6 += v[i + 6], s7 += v[i + 7];
    }
    asm volatile("" ::: "memory");
  }
  const Vector total = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
  float sum = 0.0f;
  for (int64_t lane = 0; lane < lanes; ++lane) sum += total[lane];
  return sum;
}

// a = b + s * c over `floats` floats, `sweeps` times; each sweep's stores are kept by the clobber.
template <typename Vector>
__attribute__((always_inline)) inline void triad_sweeps(float* a, const float* b, const float* c, int64_t floats,
                                                        int64_t sweeps) {
  constexpr int64_t lanes = sizeof(Vector) / sizeof(float);
  Vector* va = reinterpret_cast<Vector*>(a);
  const Vector* vb = reinterpret_cast<const Vector*>(b);
  const Vector* vc = reinterpret_cast<const Vector*>(c);
  const Vector scalar = Vector{} + 3.0f;
  for (int64_t sweep = 0; sweep < sweeps; ++sweep) {
    for (int64_t i = 0; i < floats / lanes; ++i) va[i] = vb[i] + scalar * vc[i];
    asm volatile("" ::: "memory");
  }
}

__attribute__((target("avx512f"))) float read_avx512(const float* data, int64_t floats, int64_t sweeps) {
  return read_sweeps<ReadVector16>(data, floats, sweeps);
}
__attribute__((target("avx2"))) float read_avx2(const float* data, int64_t floats, int64_t sweeps) {
  return read_sweeps<ReadVector8>(data, floats, sweeps);
}
float read_sse2(const float* data, int64_t floats, int64_t sweeps) {
  return read_sweeps<ReadVector4>(data, floats, sweeps);
}
__attribute__((target("avx512f"))) void triad_avx512(float* a, const float* b, const float* c, int64_t floats,
                                                     int64_t sweeps) {
  triad_sweeps<ReadVector16>(a, b, c, floats, sweeps);
}
__attribute__((target("avx2"))) void triad_avx2(float* a, const float* b, const float* c, int64_t floats,
                                                int64_t sweeps) {
  triad_sweeps<ReadVector8>(a, b, c, floats, sweeps);
}
void triad_sse2(float* a, const float* b, const float* c, int64_t floats, int64_t sweeps) {
  triad_sweeps<ReadVector4>(a, b, c, floats, sweeps);
}

struct SweepKernels {
  const char* isa;
  float (*read)(const float*, int64_t, int64_t);
  void (*triad)(float*, const float*, const float*, int64_t, int64_t);
};

SweepKernels widest_sweep_kernels() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512", read_avx512, triad_avx512};
  if (__builtin_cpu_supports("avx2")) return {"avx2", read_avx2, triad_avx2};
  return {"sse2", read_sse2, triad_sse2};
}

volatile float sweep_sink = 0.0f;  // keeps the read sweeps' sums alive

// Arrays aligned for the widest vector (the sweeps load whole aligned vectors), freed with free.
struct FreeDeleter {
  void operator()(void* pointer) const { std::free(pointer); }
};
template <typename T>
using AlignedArray = std::unique_ptr<T[], FreeDeleter>;
using AlignedFloats = AlignedArray<float>;

template <typename T>
AlignedArray<T> aligned_array(int64_t count) {  // count * sizeof(T) is a multiple of 64
  void* memory = std::aligned_alloc(64, static_cast<size_t>(count) * sizeof(T));
  if (!memory) throw std::bad_alloc();
  return AlignedArray<T>(static_cast<T*>(memory));
}
AlignedFloats aligned_floats(int64_t count) { return aligned_array<float>(count); }

// ---- cache levels --------------------------------------------------------------------------------

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "4K", "2048K", "32M" -> bytes; 0 when unreadable.
size_t parse_size(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return 0;
  size_t value = std::stoul(text);
  if (text.back() == 'K') value <<= 10;
  if (text.back() == 'M') value <<= 20;
  if (text.back() == 'G') value <<= 30;
  return value;
}

// CPUs in a sysfs list such as "0-3,8,10-11".
int count_cpus(const std::string& list) {
  int count = 0;
  std::stringstream parts(list);
  std::string part;
  while (std::getline(parts, part, ',')) {
    if (part.empty()) continue;
    const size_t dash = part.find('-');
    count += dash == std::string::npos ? 1 : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
  }
  return std::max(count, 1);
}

struct CacheLevel {
  std::string name;  // "L1d", "L2", "L3"
  size_t bytes = 0;  // one instance
  int sharers = 1;   // CPUs sharing one instance
};

// CPU 0's data and unified caches, fastest first, from sysfs; empty when unknown.
std::vector<CacheLevel> data_cache_levels() {
  std::vector<CacheLevel> levels;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string type = read_line(dir + "type"), level = read_line(dir + "level");
    if (type.empty() || level.empty()) break;
    if (type == "Instruction") continue;
    CacheLevel cache;
    cache.name = "L" + level + (type == "Data" ? "d" : "");
    cache.bytes = parse_size(read_line(dir + "size"));
    cache.sharers = count_cpus(read_line(dir + "shared_cpu_list"));
    if (cache.bytes > 0) levels.push_back(cache);
  }
  std::sort(levels.begin(), levels.end(), [](const CacheLevel& a, const CacheLevel& b) { return a.name < b.name; });
  return levels;
}

// What `threads` threads can hold of a level together: one instance per thread up to the number of
// instances the machine has (private caches multiply, a cache shared by every CPU does not).
double capacity_for(const CacheLevel& level, int threads) {
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const long instances = std::max(1L, cpus / level.sharers);
  return static_cast<double>(level.bytes) * static_cast<double>(std::min<long>(threads, instances));
}

// How one thread sweeps an array of `floats` floats in one timed measurement: an array that fits in
// kBytesPerMeasurement is swept whole, again and again (it stays in its cache); a larger one is
// swept one window at a time, the next window at each measurement (it cycles through memory).
// Every measurement stays short (a few milliseconds at memory speed), so that on a busy machine
// some of them run without the scheduler taking the core away.
struct SweepPlan {
  int64_t window_floats, windows, sweeps;

  static SweepPlan of(int64_t floats, int arrays) {
    constexpr int64_t kBytesPerMeasurement = 32 << 20;  // per thread
    const int64_t bytes = floats * static_cast<int64_t>(sizeof(float)) * arrays;
    if (bytes <= kBytesPerMeasurement) return {floats, 1, kBytesPerMeasurement / bytes};
    const int64_t window = std::max<int64_t>(
        kSweepGranule, kBytesPerMeasurement / arrays / static_cast<int64_t>(sizeof(float)) / kSweepGranule * kSweepGranule);
    return {window, floats / window, 1};
  }
  int64_t offset(int64_t measurement) const { return measurement % windows * window_floats; }
  double bytes(int arrays) const { return 4.0 * window_floats * sweeps * arrays; }
};

// Bytes per second of a read sweep over `read_bytes` and a triad over `triad_bytes` (three arrays
// of a third each, counted as STREAM counts it: the write-allocate read of `a` is not counted;
// none when `triad_bytes` is 0),
// split evenly between the threads, each with its own arrays (first touched by it) and its own
// clock: each thread's best rate, summed over the threads; the larger of the two kernels. Threads
// time themselves, with no barrier between repetitions, so that a thread the scheduler holds back
// (a busy machine) does not slow down the other's measurement. The sum of the threads' best
// rates is at least what they reach together: a ceiling, never below it.
double sweep_gb_per_s(const SweepKernels& kernels, int threads, double read_bytes, double triad_bytes,
                      double budget_seconds) {
  auto granules = [](double bytes) {
    return std::max<int64_t>(kSweepGranule, static_cast<int64_t>(bytes / sizeof(float)) / kSweepGranule * kSweepGranule);
  };
  const int64_t read_floats = granules(read_bytes / threads), triad_floats = granules(triad_bytes / threads / 3);
  const SweepPlan read_plan = SweepPlan::of(read_floats, 1), triad_plan = SweepPlan::of(triad_floats, 3);
  std::vector<double> read_rates(threads, 0.0), triad_rates(threads, 0.0);
  const bool with_triad = triad_bytes > 0;
  bool triad_right = true;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const AlignedFloats a = aligned_floats(triad_floats), b = aligned_floats(triad_floats), c = aligned_floats(triad_floats);
    std::fill(a.get(), a.get() + triad_floats, 0.0f);
    std::fill(b.get(), b.get() + triad_floats, 1.0f);
    std::fill(c.get(), c.get() + triad_floats, 2.0f);
    // The read sweeps `b` when it is large enough (memory), else an array of its own (caches).
    AlignedFloats own;
    if (read_floats > triad_floats) {
      own = aligned_floats(read_floats);
      std::fill(own.get(), own.get() + read_floats, 1.0f);
    }
    const float* data = own ? own.get() : b.get();
    float sum = 0.0f;
    int64_t measurement = 0;
    const double read_seconds = best_seconds(
        [&] {
          const int64_t at = read_plan.offset(measurement++);
          sum += kernels.read(data + at, read_plan.window_floats, read_plan.sweeps);
        },
        budget_seconds);
    read_rates[t] = read_plan.bytes(1) / read_seconds;
    if (with_triad) {
      measurement = 0;
      const double triad_seconds = best_seconds(
          [&] {
            const int64_t at = triad_plan.offset(measurement++);
            kernels.triad(a.get() + at, b.get() + at, c.get() + at, triad_plan.window_floats, triad_plan.sweeps);
          },
          budget_seconds);
      triad_rates[t] = triad_plan.bytes(3) / triad_seconds;
    }
    if (t == 0) sweep_sink = sum;
    if (with_triad && a[0] != 7.0f) {
#pragma omp atomic write
      triad_right = false;
    }
  }
  if (!triad_right) throw std::logic_error("roofline triad computed a wrong value");
  double read = 0, triad = 0;
  for (int t = 0; t < threads; ++t) read += read_rates[t], triad += triad_rates[t];
  return std::max(read, triad) / 1e9;
}

// A cache level the probe measures: its name and what the probe's threads hold of it together.
struct ProbedLevel {
  std::string name;
  double capacity_bytes = 0;
};

struct ProbedLevels {
  std::vector<ProbedLevel> levels;  // fastest first
  std::string method;
  std::vector<WorkingSetRate> sweep;  // the points the levels were found in, if they were
};

// The read rate of `threads` threads over working sets per thread from 4 KiB up, twice the last
// each time, to 256 MiB (at most 1 GiB over all threads): past any last-level cache this probe
// has met, so that the sweep ends on memory.
std::vector<WorkingSetRate> working_set_sweep(int threads) {
  constexpr double kPointBudgetSeconds = 0.02;
  const SweepKernels kernels = widest_sweep_kernels();
  const double largest = std::min(256.0 * (1 << 20), 1024.0 * (1 << 20) / threads);
  std::vector<WorkingSetRate> sweep;
  for (double bytes = 4096; bytes <= largest; bytes *= 2)
    sweep.push_back({bytes, sweep_gb_per_s(kernels, threads, bytes * threads, 0, kPointBudgetSeconds)});
  return sweep;
}

std::string bytes_text(double bytes) {
  char text[32];
  if (bytes >= (1 << 20))
    std::snprintf(text, sizeof text, "%.0f MiB", bytes / (1 << 20));
  else
    std::snprintf(text, sizeof text, "%.0f KiB", bytes / 1024);
  return text;
}

// The levels the operating system lists for CPU 0; where it lists none (or
// PHASEBENCH_ROOFLINE_CACHES=sweep asks for the sweep, to check it against the listed levels), the
// levels a working-set sweep shows (cache_levels_in_sweep), named L1d, L2, L3 in their order.
ProbedLevels cache_levels_to_probe(int threads) {
  ProbedLevels probed;
  const char* forced = std::getenv("PHASEBENCH_ROOFLINE_CACHES");
  if (!forced || std::string(forced) != "sweep")
    for (const CacheLevel& level : data_cache_levels())
      probed.levels.push_back({level.name, capacity_for(level, threads)});
  if (!probed.levels.empty()) {
    probed.method = "the sizes the operating system lists (/sys/devices/system/cpu/cpu0/cache)";
    return probed;
  }
  probed.sweep = working_set_sweep(threads);
  const std::vector<FoundCacheLevel> found = cache_levels_in_sweep(probed.sweep);
  for (size_t i = 0; i < found.size(); ++i)
    probed.levels.push_back({i == 0 ? "L1d" : "L" + std::to_string(i + 1), found[i].bytes_per_thread * threads});
  probed.method = "found by a read sweep of " + std::to_string(threads) + " threads over working sets of " +
                  bytes_text(probed.sweep.front().bytes_per_thread) + " to " +
                  bytes_text(probed.sweep.back().bytes_per_thread) +
                  " per thread, doubling: a level ends where the rate falls " +
                  "by 1.25x or more, its size the largest working set before the fall, per thread times the threads";
  return probed;
}

// Every cache level's bandwidth with `threads` threads. Level i is swept over half its
// capacity, or over twice the faster levels' capacity when that is less: just past what the faster
// level holds, where this level is at its fastest (the roofline needs each level's best).
std::vector<CacheCeiling> measure_cache_bandwidths(int threads, const std::vector<ProbedLevel>& levels) {
  constexpr double kCacheBudgetSeconds = 0.1;  // per kernel and level
  const SweepKernels kernels = widest_sweep_kernels();
  std::vector<CacheCeiling> ceilings;
  double faster_capacity = 0;
  for (const ProbedLevel& level : levels) {
    CacheCeiling ceiling;
    ceiling.name = level.name;
    ceiling.capacity_bytes = level.capacity_bytes;
    ceiling.working_set_bytes = ceiling.capacity_bytes / 2;
    if (faster_capacity > 0) ceiling.working_set_bytes = std::min(ceiling.working_set_bytes, 2 * faster_capacity);
    ceiling.gb_per_s = sweep_gb_per_s(kernels, threads, ceiling.working_set_bytes, ceiling.working_set_bytes,
                                      kCacheBudgetSeconds);
    ceilings.push_back(ceiling);
    faster_capacity = ceiling.capacity_bytes;
  }
  return ceilings;
}

// ---- memory bandwidth ----------------------------------------------------------------------------

struct Bandwidth {
  double gb_per_s;
  std::string method;
};

// The same sweeps over arrays of 4x the last-level cache each (at least 64 MiB, at most 1 GiB): a
// triad over three of them and a read of one, so that no repetition finds its data in cache.
Bandwidth measure_bandwidth(int threads, const std::vector<ProbedLevel>& levels,
                            double budget_seconds = kBudgetSeconds) {
  double last_level_bytes = 0;
  for (const ProbedLevel& level : levels) last_level_bytes = std::max(last_level_bytes, level.capacity_bytes);
  const size_t array_bytes = std::clamp<size_t>(static_cast<size_t>(4 * last_level_bytes), 64 << 20, 1024 << 20);
  const double bytes = static_cast<double>(array_bytes);
  const double gb_per_s = sweep_gb_per_s(widest_sweep_kernels(), threads, bytes, 3 * bytes, budget_seconds);
  return {gb_per_s, "the larger of a triad a=b+s*c over 3 x " + std::to_string(array_bytes >> 20) +
                        " MiB fp32 arrays (counted as STREAM counts it) and a read-only sweep of " +
                        std::to_string(array_bytes >> 20) + " MiB, split between " + std::to_string(threads) +
                        " threads, each thread's best repetition, summed"};
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

double onednn_sgemm_gflop_per_s(SgemmFunction sgemm, double budget_seconds = kBudgetSeconds) {
  const int64_t n = kGemmSize;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  const double seconds = best_seconds(
      [&] {
        if (sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n) != 0)
          throw std::runtime_error("dnnl_sgemm failed");
      },
      budget_seconds);
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

// Each thread times its own runs (no barrier between them, as the sweeps do) and its best rate
// counts; the rates of the threads that ran are summed.
double fma_kernel_gflop_per_s(const FmaKernel& kernel, int threads, double budget_seconds = kBudgetSeconds) {
  constexpr int64_t kSteps = 2'000'000;  // a few milliseconds per run
  std::vector<double> rates(threads, 0.0);
#pragma omp parallel num_threads(threads)
  {
    float result = 0.0f;
    const double seconds = best_seconds([&] { result += kernel.run(kSteps); }, budget_seconds);
    rates[omp_get_thread_num()] = 2.0 * kernel.lanes * static_cast<double>(kSteps) / seconds;
    if (omp_get_thread_num() == 0) fma_sink = result;
  }
  double total = 0;
  for (double rate : rates) total += rate;
  return total / 1e9;
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

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
  ProbedLevels levels = cache_levels_to_probe(threads);
  const Bandwidth bandwidth = measure_bandwidth(threads, levels.levels);
  ceilings.bandwidth_gb_per_s = bandwidth.gb_per_s;
  ceilings.bandwidth_method = bandwidth.method;
  ceilings.caches = measure_cache_bandwidths(threads, levels.levels);
  ceilings.cache_method = std::move(levels.method);
  ceilings.cache_sweep = std::move(levels.sweep);
  const FmaKernel kernel = widest_fma_kernel();
  const double kernel_rate = fma_kernel_gflop_per_s(kernel, threads);
  const std::string kernel_detail = std::to_string(kernel.lanes) + " independent fp32 multiply-add chains per "
                                    "thread in registers";
  ceilings.peak_gflop_per_s = kernel_rate;
  ceilings.compute_method = kernel.name;
  ceilings.compute_detail = kernel_detail + ", " + std::to_string(threads) + " threads";
  // With oneDNN in the process the method (and the cache file) is "onednn_sgemm": the larger of the
  // library's sgemm and the kernel, so that a row beating the library still stays under the peak.
  if (const SgemmFunction sgemm = find_onednn_sgemm()) {
    const double library_rate = onednn_sgemm_gflop_per_s(sgemm);
    char rates[128];
    std::snprintf(rates, sizeof rates, " (%.1f GFLOP/s) and %s (%.1f GFLOP/s)", library_rate, kernel.name, kernel_rate);
    ceilings.peak_gflop_per_s = std::max(library_rate, kernel_rate);
    ceilings.compute_method = "onednn_sgemm";
    ceilings.compute_detail = "the larger of dnnl_sgemm M=N=K=" + std::to_string(kGemmSize) + rates + ": " +
                              kernel_detail + ", " + std::to_string(threads) + " OpenMP threads, best of repetitions";
  }
  ceilings.probe_seconds = seconds_since(start);
  ceilings.source = "measured";
  return ceilings;
}

BriefProbe measure_briefly(const Ceilings& cached) {
  constexpr double kBriefBudgetSeconds = 0.05;  // per kernel: a few percent of measure()'s
  const auto start = Clock::now();
  const int threads = cached.threads;
  OmpThreads scoped_threads(threads);
  std::vector<ProbedLevel> levels;  // the cached levels size the arrays, as they did for the cache
  for (const CacheCeiling& cache : cached.caches) levels.push_back({cache.name, cache.capacity_bytes});
  const double first = measure_bandwidth(threads, levels, kBriefBudgetSeconds).gb_per_s;
  const double second = measure_bandwidth(threads, levels, kBriefBudgetSeconds).gb_per_s;
  BriefProbe probe;
  probe.bandwidth_gb_per_s = std::max(first, second);
  probe.noise = std::abs(first - second) / probe.bandwidth_gb_per_s;
  probe.peak_gflop_per_s = fma_kernel_gflop_per_s(widest_fma_kernel(), threads, kBriefBudgetSeconds);
  if (const SgemmFunction sgemm = find_onednn_sgemm(); sgemm && cached.compute_method == "onednn_sgemm")
    probe.peak_gflop_per_s = std::max(probe.peak_gflop_per_s, onednn_sgemm_gflop_per_s(sgemm, kBriefBudgetSeconds));
  probe.seconds = seconds_since(start);
  return probe;
}

}  // namespace pb::roofline
