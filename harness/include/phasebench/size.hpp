#pragma once
// A size: one of the named sizes (fixed shapes, comparable across runs), a scale of the default
// size ("4x", "0.25x", "1/16x"), which each workload maps to a valid shape by its own rule, or a
// random shape ("random-3"): every free dimension drawn from a shape seed, near the small size,
// so that checks reach the block offsets and tails that no catalog size does.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb {

enum class SizeName { Small, Default, Large, Scaled, Random };

class SizeClass {
 public:
  static const SizeClass Small, Default, Large;

  constexpr SizeClass() = default;
  /// The default size scaled by `factor` (finite and > 0; parse_size checks text for that).
  static SizeClass scaled(double factor);
  /// The random shape of `shape_seed` (>= 1; 1 is every free dimension at its minimum).
  static SizeClass random(uint32_t shape_seed);
  /// The largest shape seed a text may give.
  static constexpr uint32_t kMaxShapeSeed = 1'000'000;

  constexpr SizeName name() const { return name_; }
  constexpr bool is_scaled() const { return name_ == SizeName::Scaled; }
  constexpr bool is_random() const { return name_ == SizeName::Random; }
  constexpr bool is_named() const { return !is_scaled() && !is_random(); }
  /// The factor of a scaled size; 1 for a named one.
  constexpr double scale() const { return scale_; }
  /// The shape seed of a random size; 0 for any other.
  constexpr uint32_t shape_seed() const { return shape_seed_; }

  /// The same point of a sweep: equal, or the default size and 1x (the same shape).
  bool same_point(const SizeClass& other) const;

  friend constexpr bool operator==(const SizeClass& a, const SizeClass& b) {
    return a.name_ == b.name_ && a.scale_ == b.scale_ && a.shape_seed_ == b.shape_seed_;
  }
  friend constexpr bool operator!=(const SizeClass& a, const SizeClass& b) { return !(a == b); }
  /// Named sizes first (small, default, large), then scales in increasing order, then random
  /// shapes by seed.
  friend constexpr bool operator<(const SizeClass& a, const SizeClass& b) {
    if (a.name_ != b.name_) return a.name_ < b.name_;
    return a.scale_ != b.scale_ ? a.scale_ < b.scale_ : a.shape_seed_ < b.shape_seed_;
  }

 private:
  constexpr SizeClass(SizeName name, double scale, uint32_t shape_seed = 0)
      : name_(name), scale_(scale), shape_seed_(shape_seed) {}

  SizeName name_ = SizeName::Default;
  double scale_ = 1.0;
  uint32_t shape_seed_ = 0;
};

inline constexpr SizeClass SizeClass::Small{SizeName::Small, 1.0};
inline constexpr SizeClass SizeClass::Default{SizeName::Default, 1.0};
inline constexpr SizeClass SizeClass::Large{SizeName::Large, 1.0};

/// "small", "default", "large", the scale's canonical text: the shortest decimal that reads back
/// as the same factor, then "x" ("0.25x", "4x", "0.0625x"), or "random-<shape seed>".
std::string to_string(SizeClass size);
/// A size name, a scale ("4x", "0.25x", "1/16x", and to_string's texts) or a random shape
/// ("random-3"); nullopt for anything else. Throws InputError for a scale that is no positive
/// finite number ("0x", "-1x", "nanx").
std::optional<SizeClass> parse_size(std::string_view text);
/// A comma-separated list of sizes, in the order given; "random:N" stands for random-1 ...
/// random-N. Throws InputError naming the item for an unknown or empty item, a bad scale, a bad
/// random count ("random:0", "random:x"), or a point given twice ("4x,4x", "default,1x").
std::vector<SizeClass> parse_size_list(std::string_view text);
/// The texts of `sizes`, comma-separated: what parse_size_list reads back.
std::string size_list_text(const std::vector<SizeClass>& sizes);
/// The named sizes.
std::vector<SizeClass> all_sizes();

namespace scaling {

/// The rounding rules a workload's scale rule is written with. Each takes the default size's
/// count of a dimension that grows with the work and the factor it grows by (the size's scale, or
/// its square root for each side of a 2-D grid), and throws InputError when the count leaves the
/// range of an int.

/// round(base * factor), at least `minimum`.
int64_t count(int64_t base, double factor, int64_t minimum = 1);
/// round(base * factor) to a whole number of `block`s, at least one block.
int64_t whole_blocks(int64_t base, double factor, int64_t block);
/// The power of two nearest base * factor (in log scale), at least `minimum` (a power of two).
int64_t power_of_two(int64_t base, double factor, int64_t minimum = 1);

}  // namespace scaling

namespace random_shape {

/// The drawing rules a workload's random-shape rule is written with. Each draws one dimension,
/// numbered by `dimension` (distinct within the workload), from the size's shape seed: the same
/// (seed, dimension) always gives the same value, and shape seed 1 gives the minimum.

/// A count in [minimum, maximum].
int64_t count(SizeClass size, int dimension, int64_t minimum, int64_t maximum);
/// A power of two in [minimum, maximum] (both powers of two).
int64_t power_of_two(SizeClass size, int dimension, int64_t minimum, int64_t maximum);

}  // namespace random_shape

}  // namespace pb
