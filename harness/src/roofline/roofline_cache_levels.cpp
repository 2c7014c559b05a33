// Cache levels found in a working-set sweep, for machines that do not list their caches.

#include <algorithm>

#include "roofline/roofline.hpp"

namespace pb::roofline {
namespace {

struct Plateau {
  double largest_bytes = 0;  // per thread
  double best_gb_per_s = 0;
  int points = 0;

  void add(const WorkingSetRate& point) {
    largest_bytes = std::max(largest_bytes, point.bytes_per_thread);
    best_gb_per_s = std::max(best_gb_per_s, point.gb_per_s);
    ++points;
  }
  void absorb(const Plateau& later) {
    largest_bytes = std::max(largest_bytes, later.largest_bytes);
    best_gb_per_s = std::max(best_gb_per_s, later.best_gb_per_s);
    points += later.points;
  }
};

// Cuts the sweep (sorted by working set) where a rate falls by kCacheStep or more from the point
// before it: within a level, and across the gradual part of a transition, the rate falls less
// from one doubling to the next.
std::vector<Plateau> cut_into_plateaus(const std::vector<WorkingSetRate>& sweep) {
  std::vector<Plateau> plateaus;
  for (size_t i = 0; i < sweep.size(); ++i) {
    if (i == 0 || sweep[i].gb_per_s * kCacheStep <= sweep[i - 1].gb_per_s) plateaus.emplace_back();
    plateaus.back().add(sweep[i]);
  }
  return plateaus;
}

// A one-point plateau between two others is a transition (the data partly in a faster level):
// it belongs to no level, so that it stretches none. Then a plateau whose best is within
// kCacheStep of the previous one's is the same level, split by noise.
std::vector<Plateau> merge_transitions(const std::vector<Plateau>& plateaus) {
  std::vector<Plateau> merged;
  for (size_t i = 0; i < plateaus.size(); ++i) {
    const Plateau& plateau = plateaus[i];
    const bool transition = plateau.points == 1 && i > 0 && i + 1 < plateaus.size();
    if (transition) continue;
    if (!merged.empty() && plateau.best_gb_per_s * kCacheStep >= merged.back().best_gb_per_s)
      merged.back().absorb(plateau);
    else
      merged.push_back(plateau);
  }
  return merged;
}

}  // namespace

std::vector<FoundCacheLevel> cache_levels_in_sweep(std::vector<WorkingSetRate> sweep) {
  sweep.erase(std::remove_if(sweep.begin(), sweep.end(),
                             [](const WorkingSetRate& p) { return !(p.bytes_per_thread > 0) || !(p.gb_per_s > 0); }),
              sweep.end());
  if (sweep.size() < 3) return {};
  std::sort(sweep.begin(), sweep.end(),
            [](const WorkingSetRate& a, const WorkingSetRate& b) { return a.bytes_per_thread < b.bytes_per_thread; });
  // A cache's rate can only fall as the working set grows: a point below a later one was
  // disturbed (the machine was busy) and counts at the later one's rate.
  for (size_t i = sweep.size() - 1; i-- > 0;) sweep[i].gb_per_s = std::max(sweep[i].gb_per_s, sweep[i + 1].gb_per_s);
  const std::vector<Plateau> plateaus = merge_transitions(cut_into_plateaus(sweep));
  std::vector<FoundCacheLevel> levels;
  for (size_t i = 0; i + 1 < plateaus.size(); ++i)  // the last plateau is memory
    levels.push_back({plateaus[i].largest_bytes, plateaus[i].best_gb_per_s});
  return levels;
}

}  // namespace pb::roofline
