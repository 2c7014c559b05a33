#pragma once
// A float array between guards, for the tests of bodies that take raw pointers and write at
// computed offsets (geometry's streamed stores): a run misplaced by up to the array's length reads
// guard values (and gives values far from the expected ones) or writes into a guard (which the
// test then finds changed), instead of reading or corrupting memory it does not own. The array
// starts a chosen number of floats past a 64-byte boundary, so that every alignment of an output
// can be tried.

#include <cstdint>
#include <vector>

namespace pb {

inline constexpr float kGuardValue = -12345.0f;

/// n floats between two guards of n floats each, the first of them `offset` floats past a 64-byte
/// boundary.
class GuardedFloats {
 public:
  explicit GuardedFloats(int64_t n, int64_t offset = 0) : n_(n), storage_(3 * n + 16 + offset, kGuardValue) {
    const auto after_guard = reinterpret_cast<uintptr_t>(storage_.data() + n);
    start_ = n + static_cast<int64_t>((64 - after_guard % 64) % 64 / sizeof(float)) + offset;
  }
  float* data() { return storage_.data() + start_; }
  const float* data() const { return storage_.data() + start_; }
  bool guards_intact() const {
    for (int64_t i = 0; i < n_; ++i)
      if (storage_[start_ - n_ + i] != kGuardValue || storage_[start_ + n_ + i] != kGuardValue) return false;
    return true;
  }

 private:
  int64_t n_, start_ = 0;
  std::vector<float> storage_;
};

}  // namespace pb
