// What a streaming loop of a given shape reaches at a given working set, for the limit sections
// of docs/geometry.md and docs/trainer2.md: the roofline probe measures each cache level at a
// working set well inside it (L3 at 4 MiB), while a workload's 20-40 MB lie near or past the L3's
// capacity, which on a VM is shared with other guests. The loop reads READS float streams and
// writes WRITES float streams, h_w[i] = sum_r a_r[i] * 0.5 + w (with no writes: the sum of the
// one stream read), each thread its contiguous share, repeated over the same arrays; bytes counted
// as the loop names them (4 per float read or written, no write-allocate). Prints the best and the
// median GB/s of the repetitions at each working set. WRITES "1nt" (with READS 2): the write with
// non-temporal stores, 4 floats at a time (lior_optimizer_step's streaming_update; no
// write-allocate read of the written stream).
//
//   working_set_bandwidth READS WRITES MB...      e.g. working_set_bandwidth 3 2 10 20 40 84
//   (READS WRITES: 1 0, 1 1, 2 1, 2 1nt, 3 2 or 4 4; 1 0 sums the stream)
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Rate {
  double best, median;
};

// A sum in 128 independent lanes, so that it vectorizes (one float sum may not be reordered) into
// 8 independent vector accumulators at AVX-512, as the roofline probe's read sweep: with one
// accumulator (16 lanes) each vector add waits for the last one, and the loop measures the add's
// latency (about 16 B per cycle and thread), not the memory.
float lane_sum(const float* x, size_t n) {
  constexpr size_t kLanes = 128;
  float lanes[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) lanes[l] += x[i + l];
  for (; i < n; ++i) lanes[0] += x[i];
  float sum = 0.f;
  for (float lane : lanes) sum += lane;
  return sum;
}

// h[i] = a[i] * 0.5 + b[i] * 0.5 over [begin, end) with non-temporal stores where h + i is 16-byte
// aligned, ordinary ones before and after.
void streamed_pair(const float* a, const float* b, float* h, size_t begin, size_t end) {
  size_t i = begin;
  for (; i < end && reinterpret_cast<uintptr_t>(h + i) % 16 != 0; ++i) h[i] = a[i] * 0.5f + b[i] * 0.5f;
  const __m128 half = _mm_set1_ps(0.5f);
  for (; i + 4 <= end; i += 4)
    _mm_stream_ps(h + i, _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(a + i), half), _mm_mul_ps(_mm_loadu_ps(b + i), half)));
  for (; i < end; ++i) h[i] = a[i] * 0.5f + b[i] * 0.5f;
  _mm_sfence();
}

// Reads and writes are template arguments so that the stream loops unroll and the loop over i
// vectorizes as a workload's would.
template <int reads, int writes, bool nontemporal = false>
Rate gb_per_s(double megabytes) {
  const size_t n = size_t(megabytes * 1e6 / (4.0 * (reads + writes)));
  std::vector<std::vector<float>> in(reads, std::vector<float>(n, 1.f)), out(writes, std::vector<float>(n, 0.f));
  const float* a[reads];
  float* h[writes > 0 ? writes : 1];
  for (int r = 0; r < reads; ++r) a[r] = in[r].data();
  for (int w = 0; w < writes; ++w) h[w] = out[w].data();
  const int repetitions = std::max(7, int(3000 / megabytes));
  std::vector<double> seconds;
  double sink = 0;  // a read-only shape sums its streams, so that the reads are not dropped
  for (int rep = 0; rep < repetitions; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    float total = 0.f;
#pragma omp parallel reduction(+ : total)
    {
      // Each thread its contiguous share, as schedule(static) would give it.
      const size_t threads = size_t(omp_get_num_threads()), t = size_t(omp_get_thread_num());
      const size_t begin = n * t / threads, end = n * (t + 1) / threads;
      if constexpr (writes == 0) {
        total += lane_sum(a[0] + begin, end - begin);
      } else if constexpr (nontemporal) {
        static_assert(reads == 2 && writes == 1, "non-temporal stores: the 2 1 shape only");
        streamed_pair(a[0], a[1], h[0], begin, end);
      } else {
        for (size_t i = begin; i < end; ++i) {
          float sum = 0.f;
          for (int r = 0; r < reads; ++r) sum += a[r][i] * 0.5f;
          for (int w = 0; w < writes; ++w) h[w][i] = sum + float(w);
        }
      }
    }
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    sink += total;
  }
  if (sink == -1) std::printf("%g\n", sink);
  std::sort(seconds.begin(), seconds.end());
  const double bytes = 4.0 * (reads + writes) * n;
  return {bytes / seconds.front() / 1e9, bytes / seconds[seconds.size() / 2] / 1e9};
}

Rate gb_per_s(int reads, int writes, bool nontemporal, double megabytes) {
  if (nontemporal) return gb_per_s<2, 1, true>(megabytes);
  if (reads == 3 && writes == 2) return gb_per_s<3, 2>(megabytes);
  if (reads == 4 && writes == 4) return gb_per_s<4, 4>(megabytes);
  if (reads == 2 && writes == 1) return gb_per_s<2, 1>(megabytes);
  if (reads == 1 && writes == 0) return gb_per_s<1, 0>(megabytes);
  return gb_per_s<1, 1>(megabytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: working_set_bandwidth READS WRITES MB...\n");
    return 2;
  }
  const int reads = std::atoi(argv[1]), writes = std::atoi(argv[2]);
  const bool nontemporal = std::strcmp(argv[2], "1nt") == 0;
  const bool shape_built = (reads == 1 && writes <= 1) || (reads == 2 && writes == 1) || (reads == 3 && writes == 2) ||
                           (reads == 4 && writes == 4);
  const bool spelled = (nontemporal && reads == 2) || std::strcmp(argv[2], std::to_string(writes).c_str()) == 0;
  if (!shape_built || !spelled) {
    std::fprintf(stderr, "working_set_bandwidth: READS WRITES must be one of 1 0, 1 1, 2 1, 2 1nt, 3 2, 4 4\n");
    return 2;
  }
  for (int arg = 3; arg < argc; ++arg) {
    const double mb = std::atof(argv[arg]);
    if (!(mb > 0)) {
      std::fprintf(stderr, "working_set_bandwidth: %s is not a working set in MB\n", argv[arg]);
      return 2;
    }
    const Rate rate = gb_per_s(reads, writes, nontemporal, mb);
    std::printf("%d read + %d written%s streams, %6.1f MB, %d thread(s): best %6.1f GB/s, median %6.1f GB/s\n",
                reads, writes, nontemporal ? " (non-temporal)" : "", mb, omp_get_max_threads(), rate.best,
                rate.median);
  }
}
