#include "engine/cpu_probe.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace pb::cpu_probe {
namespace {

using Clock = std::chrono::steady_clock;

// About 35 us on an idle 2-vCPU EPYC guest. Library calls on scalars slow most on a shared core
// (a dependent chain of multiply-adds does not slow at all).
constexpr int kProbeRounds = 150;
constexpr int kLanes = 16;
// Threads that have not all started after this long start anyway: a CPU that busy is measured by
// what its thread then gets.
constexpr auto kStartWait = std::chrono::milliseconds(5);
// A probe whose threads have not all finished after this long measures nothing.
constexpr auto kFinishWait = std::chrono::seconds(1);

volatile float probe_sink;

double probe_work_us() {
  float x[kLanes];
  for (int k = 0; k < kLanes; ++k) x[k] = 0.1f * static_cast<float>(k);
  const auto start = Clock::now();
  for (int round = 0; round < kProbeRounds; ++round)
    for (int k = 0; k < kLanes; ++k)
      x[k] = std::tanh(x[k] * 0.5f + 0.01f * static_cast<float>(round)) + std::erf(x[(k + 3) % kLanes] * 0.3f);
  probe_sink = x[kLanes / 2];
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

// One sleeping thread per allowed CPU; probe() wakes them all, they wait for each other and run
// the work at once, each on its own CPU. The threads sleep between probes until the process ends
// (the object is never destroyed).
class ProbeThreads {
 public:
  explicit ProbeThreads(const std::vector<int>& cpus) : owner_(getpid()), results_(cpus.size()) {
    for (size_t i = 0; i < cpus.size(); ++i) threads_.emplace_back([this, i, cpu = cpus[i]] { serve(i, cpu); });
  }
  ProbeThreads(const ProbeThreads&) = delete;
  ProbeThreads& operator=(const ProbeThreads&) = delete;

  pid_t owner() const { return owner_; }

  double probe() {
    std::unique_lock lock(mutex_);
    started_ = 0;
    finished_ = 0;
    ++generation_;
    wake_.notify_all();
    if (!done_.wait_for(lock, kFinishWait, [&] { return finished_ == threads_.size(); }))
      return std::numeric_limits<double>::quiet_NaN();
    double slowest = 0;
    for (double us : results_) slowest = std::isnan(us) ? us : std::max(slowest, us);  // NaN stays
    return slowest;
  }

 private:
  void serve(size_t index, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const bool pinned = pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        ++started_;
      }
      wait_for_the_others();
      const double us = pinned ? std::min(probe_work_us(), probe_work_us()) : std::numeric_limits<double>::quiet_NaN();
      {
        std::lock_guard lock(mutex_);
        if (seen != generation_) continue;  // a probe that gave up on this thread has ended
        results_[index] = us;
        ++finished_;
      }
      done_.notify_one();
    }
  }

  void wait_for_the_others() {
    const auto give_up = Clock::now() + kStartWait;
    while (started_.load() < threads_.size() && Clock::now() < give_up) std::this_thread::yield();
  }

  const pid_t owner_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  std::atomic<size_t> started_ = 0;
  size_t finished_ = 0;
  std::vector<double> results_;
  std::vector<std::thread> threads_;
};

}  // namespace

double slowest_cpu_us() {
  static ProbeThreads* threads = nullptr;
  // A forked child has none of its parent's threads: it starts its own.
  static std::vector<ProbeThreads*> parents;
  if (threads && threads->owner() != getpid()) parents.push_back(std::exchange(threads, nullptr));
  if (!threads) {
    const std::vector<int> cpus = allowed_cpus();
    if (cpus.empty()) return std::numeric_limits<double>::quiet_NaN();
    threads = new ProbeThreads(cpus);
  }
  const double us = threads->probe();
  return std::isfinite(us) && us > 0 ? us : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace pb::cpu_probe
