// What the hamiltonian stencil's x-neighbour runs cost, for the limit section of docs/geometry.md:
// at the default size a site's x+1 and x-1 runs lie one lattice row (Ny sites, 128 KB of F) ahead
// of and behind its own, so a run of F is read again two rows after it was first read, after
// ~640 KB of F, V and H went through the caches: from the L2, not the L1. This loop is the
// stencil's step (16 floats of H from five runs of F and 8 potentials, the variant's expression),
// on one thread, over runs of 512 floats (2 KB, the default size's 2 D^2) with the y-neighbours
// at +-2 KB and the x-neighbours at +-DISTANCE KB, every pointer advancing in step as the
// variant's do along a row. Run over a working set that stays in the L2 at every distance, it
// prints the time per step at each distance and of the same loop with all five reads at the centre
// (one stream of F): what the distance adds, with no L3 or DRAM in it.
//
//   stencil_neighbours STREAM_KB DISTANCE_KB...       e.g. stencil_neighbours 256 2 8 32 64 128
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr long kRun = 512;  // floats of one site's run at the default size
using Block = float __attribute__((vector_size(64)));
using HalfBlock = float __attribute__((vector_size(32)));

Block load(const float* p) {
  Block b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

/// One site's run: H from the centre, x_next, x_prev, y_next, y_prev runs, 16 floats per step.
__attribute__((noinline)) void site(const float* c, const float* xn, const float* xp, const float* yn, const float* yp,
                                    const float* potential, float* out) {
  for (long k = 0; k < kRun; k += 16) {
    const Block centre = load(c + k);
    const Block laplacian = ((load(xn + k) + load(xp + k)) + load(yn + k)) + load(yp + k) - 4.0f * centre;
    HalfBlock p;
    std::memcpy(&p, potential + k / 2, sizeof p);
    const Block spread = __builtin_shufflevector(p, p, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const Block h = -0.005f * laplacian + spread * centre;
    std::memcpy(out + k, &h, sizeof h);
  }
}

/// The first 64-byte aligned float of a buffer with 16 floats to spare.
float* aligned(std::vector<float>& storage) {
  const auto address = reinterpret_cast<uintptr_t>(storage.data());
  return storage.data() + (64 - address % 64) % 64 / sizeof(float);
}

/// Median ns per 16-float step over the stream, x-neighbours at `distance` floats (0: all five
/// reads at the centre).
double ns_per_step(long stream, long distance) {
  const long margin = std::max(distance, kRun) + kRun;
  // Every array 64-byte aligned, as Kokkos' Views are: a 64-byte load across two lines costs two.
  std::vector<float> f_storage(stream + 2 * margin + 16, 1.0f), v_storage(stream / 2 + 16, 0.5f),
      h_storage(stream + 16);
  float *f = aligned(f_storage), *v = aligned(v_storage), *h = aligned(h_storage);
  const float* base = f + margin;
  std::vector<double> ns;
  const long steps = stream / 16;
  const int repetitions = std::max(9, int(500000000 / stream));  // ~0.1 s a distance at 256 KB
  for (int rep = 0; rep < repetitions; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    for (long s = 0; s < stream; s += kRun) {
      const float* c = base + s;
      if (distance == 0)
        site(c, c, c, c, c, v + s / 2, h + s);
      else
        site(c, c + distance, c - distance, c + kRun, c - kRun, v + s / 2, h + s);
    }
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / steps);
  }
  if (h[stream / 3] == -1) std::printf("%g\n", h[0]);  // keep the stores
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

bool positive_whole(const char* text, long& value) {
  char* end = nullptr;
  value = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && value > 0;
}

}  // namespace

int main(int argc, char** argv) {
  long stream_kb = 0;
  if (argc < 3 || !positive_whole(argv[1], stream_kb) || stream_kb % 2 != 0) {
    std::fprintf(stderr, "usage: stencil_neighbours STREAM_KB DISTANCE_KB...  (STREAM_KB even: whole runs)\n");
    return 2;
  }
  std::vector<long> distances_kb;
  for (int arg = 2; arg < argc; ++arg) {
    long distance_kb = 0;
    if (!positive_whole(argv[arg], distance_kb)) {
      std::fprintf(stderr, "stencil_neighbours: %s is not a distance in KB\n", argv[arg]);
      return 2;
    }
    distances_kb.push_back(distance_kb);
  }
  const long stream = stream_kb * 256;  // floats
  std::printf("stream %ld KB, all five reads at the centre: %.2f ns per 16-float step\n", stream_kb,
              ns_per_step(stream, 0));
  for (long distance_kb : distances_kb)
    std::printf("stream %ld KB, x-neighbours at +-%ld KB: %.2f ns per 16-float step\n", stream_kb, distance_kb,
                ns_per_step(stream, distance_kb * 256));
}
