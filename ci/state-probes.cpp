// Probes of the machine's state, printed as "name value" pairs on one line, for
// ci/measure-states.py: what each vCPU does alone and with the other busy, and what a round trip
// of a cache line between two threads on the first two CPUs costs. Each probe is the best of
// three, in milliseconds (the round trip in nanoseconds).
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;
volatile double sink;

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A cache line bounced between CPU 0 and CPU 1, in nanoseconds per round trip.
double round_trip_ns(int trips) {
  alignas(64) static std::atomic<int> turn{0};
  turn = 0;
  std::thread other([&] {
    pin_to(1);
    for (int i = 0; i < trips; ++i) {
      while (turn.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      turn.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin_to(0);
  const auto start = Clock::now();
  for (int i = 0; i < trips; ++i) {
    turn.store(2 * i + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const double ms = milliseconds_since(start);
  other.join();
  return 1e6 * ms / trips;
}

double dependent_chain() {
  double x = 1.0;
  for (long i = 0; i < 5'000'000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

__attribute__((target("avx512f"))) double avx512_fmas() {
  __m512 lanes[8];
  for (int k = 0; k < 8; ++k) lanes[k] = _mm512_set1_ps(1.0f + k);
  const __m512 factor = _mm512_set1_ps(0.9999999f), offset = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < 2'000'000; ++i)
    for (auto& lane : lanes) lane = _mm512_fmadd_ps(lane, factor, offset);
  for (int k = 1; k < 8; ++k) lanes[0] = _mm512_add_ps(lanes[0], lanes[k]);
  return _mm512_reduce_add_ps(lanes[0]);
}

// 64 MiB read from `buffer`, in as many passes over it as that takes.
double read_64mib(const std::vector<float>& buffer) {
  const long passes = std::max<long>(1, (64L << 20) / static_cast<long>(buffer.size() * sizeof(float)));
  float sums[8] = {};  // independent sums, so that the loads, not the additions, set the pace
  for (long p = 0; p < passes; ++p)
    for (size_t i = 0; i + 8 <= buffer.size(); i += 8)
      for (int k = 0; k < 8; ++k) sums[k] += buffer[i + k];
  return std::accumulate(sums, sums + 8, 0.0f);
}

// A random cycle through `slots` indices: each load waits for the one before.
std::vector<unsigned> random_cycle(size_t slots) {
  std::vector<unsigned> order(slots);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937(7));
  std::vector<unsigned> next(slots);
  for (size_t k = 0; k < slots; ++k) next[order[k]] = order[(k + 1) % slots];
  return next;
}

double chase(const std::vector<unsigned>& next, long steps) {
  unsigned at = 0;
  for (long k = 0; k < steps; ++k) at = next[at];
  return at;
}

// The best of three runs of `probe` on `cpu`, with the other CPU busy with the same probe or idle.
double best_of_three(const std::function<double()>& probe, int cpu, bool other_busy) {
  std::atomic<bool> done{false};
  std::thread other;
  if (other_busy)
    other = std::thread([&] {
      pin_to(1 - cpu);
      while (!done) sink = probe();
    });
  double best = 1e300;
  std::thread timed([&] {
    pin_to(cpu);
    for (int r = 0; r < 3; ++r) {
      const auto start = Clock::now();
      sink = probe();
      best = std::min(best, milliseconds_since(start));
    }
  });
  timed.join();
  done = true;
  if (other.joinable()) other.join();
  return best;
}
}  // namespace

int main() {
  if (std::thread::hardware_concurrency() < 2) {
    std::fprintf(stderr, "state-probes: needs two CPUs\n");
    return 2;
  }
  const std::vector<float> l2(64 << 10, 1.0f), l3(1 << 20, 1.0f), memory(16 << 20, 1.0f);
  const auto cycle_4mib = random_cycle(1 << 20), cycle_64mib = random_cycle(16 << 20);
  std::vector<std::pair<std::string, std::function<double()>>> probes = {
      {"chain", dependent_chain},
      {"read_256k", [&] { return read_64mib(l2); }},
      {"read_4m", [&] { return read_64mib(l3); }},
      {"read_64m", [&] { return read_64mib(memory); }},
      {"chase_4m", [&] { return chase(cycle_4mib, 1'000'000); }},
      {"chase_64m", [&] { return chase(cycle_64mib, 300'000); }},
  };
  if (__builtin_cpu_supports("avx512f")) probes.emplace_back("avx512_fma", avx512_fmas);
  double trip = 1e300;
  for (int r = 0; r < 5; ++r) trip = std::min(trip, round_trip_ns(20'000));
  std::printf("round_trip_ns %.1f", trip);
  for (const auto& [name, probe] : probes)
    for (int cpu = 0; cpu < 2; ++cpu)
      std::printf(" cpu%d_%s %.4g cpu%d_%s_other_busy %.4g", cpu, name.c_str(), best_of_three(probe, cpu, false), cpu,
                  name.c_str(), best_of_three(probe, cpu, true));
  std::printf("\n");
}
