// The floor of an FFT convolution built on FFTW, for docs/geometry.md ("The limit of
// lior_memory_conv"): per line a real forward transform of length L, a pointwise product over the
// L/2 + 1 bins and the inverse transform, over `lines` lines in chunks of `chunk` lines, the chunk's
// buffers reused (nothing read from or written to memory beyond them). One plan per chunk length,
// shared by the threads (FFTW's execute is thread-safe on other arrays), each thread its own
// buffers, the lines split evenly. Prints the median of 15 repetitions and the GFLOP/s by the
// count the suite declares (2.5 L log2 L per transform, 6 per bin).
//
//   fftw_chunks L LINES THREADS CHUNK...      e.g. fftw_chunks 8192 512 2 1 4 8 16
#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct Buffers {
  float* x;
  fftwf_complex* spectrum;
  float* y;
};

double median_ms_of_chunks(int L, int lines, int threads, int chunk) {
  const int bins = L / 2 + 1;
  std::vector<Buffers> buffers(threads);
  for (Buffers& b : buffers)
    b = {fftwf_alloc_real(size_t(chunk) * L), fftwf_alloc_complex(size_t(chunk) * bins),
         fftwf_alloc_real(size_t(chunk) * L)};
  // FFTW_MEASURE overwrites the arrays it plans on: fill them afterwards.
  fftwf_plan forward = fftwf_plan_many_dft_r2c(1, &L, chunk, buffers[0].x, nullptr, 1, L, buffers[0].spectrum,
                                               nullptr, 1, bins, FFTW_MEASURE);
  fftwf_plan inverse = fftwf_plan_many_dft_c2r(1, &L, chunk, buffers[0].spectrum, nullptr, 1, bins, buffers[0].y,
                                               nullptr, 1, L, FFTW_MEASURE);
  for (Buffers& b : buffers)
    for (size_t k = 0; k < size_t(chunk) * L; ++k) b.x[k] = int(k % L) < L / 2 ? std::sin(0.01f * k) : 0.f;
  const int chunks_per_thread = lines / chunk / threads;
  std::vector<double> ms;
  for (int rep = 0; rep < 15; ++rep) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    {
      const Buffers& b = buffers[omp_get_thread_num()];
      for (int c = 0; c < chunks_per_thread; ++c) {
        fftwf_execute_dft_r2c(forward, b.x, b.spectrum);
        for (size_t k = 0; k < size_t(chunk) * bins; ++k) {
          const float re = b.spectrum[k][0], im = b.spectrum[k][1];  // times (0.5 + 0.25i)
          b.spectrum[k][0] = 0.5f * re - 0.25f * im;
          b.spectrum[k][1] = 0.25f * re + 0.5f * im;
        }
        fftwf_execute_dft_c2r(inverse, b.spectrum, b.y);
      }
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  fftwf_destroy_plan(forward);
  fftwf_destroy_plan(inverse);
  for (Buffers& b : buffers) {
    fftwf_free(b.x);
    fftwf_free(b.spectrum);
    fftwf_free(b.y);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: fftw_chunks L LINES THREADS CHUNK...\n");
    return 2;
  }
  const int L = std::atoi(argv[1]), lines = std::atoi(argv[2]), threads = std::atoi(argv[3]);
  for (int arg = 4; arg < argc; ++arg) {
    const int chunk = std::atoi(argv[arg]);
    if (L < 2 || chunk < 1 || threads < 1 || lines % (chunk * threads) != 0) {
      std::fprintf(stderr, "fftw_chunks: LINES must be a multiple of CHUNK x THREADS\n");
      return 2;
    }
    const double ms = median_ms_of_chunks(L, lines, threads, chunk);
    const double flops = lines * (2 * 2.5 * L * std::log2(double(L)) + 6.0 * (L / 2 + 1));
    std::printf("L %d, %d lines, %d thread(s), chunks of %3d: median %7.2f ms, %5.1f GFLOP/s\n", L, lines, threads,
                chunk, ms, flops / ms / 1e6);
  }
}
