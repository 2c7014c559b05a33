#pragma once
// A size: one of the named sizes (fixed shapes, comparable across runs) or a scale of the default
// size ("4x", "0.25x", "1/16x"), which each workload maps to a valid shape by its own rule.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb {

enum class SizeName { Small, Default, Large, Scaled };

class SizeClass {
 public:
  static const SizeClass Small, Default, Large;

  constexpr SizeClass() = default;
  /// The default size scaled by `factor` (finite and > 0; parse_size checks text for that).
  static SizeClass scaled(double factor);

  constexpr SizeName name() const { return name_; }
  constexpr bool is_scaled() const { return name_ == SizeName::Scaled; }
  /// The factor of a scaled size; 1 for a named one.
  constexpr double scale() const { return scale_; }

  /// The same point of a sweep: equal, or the default size and 1x (the same shape).
  bool same_point(const SizeClass& other) const;

  friend constexpr bool operator==(const SizeClass& a, const SizeClass& b) {
    return a.name_ == b.name_ && a.scale_ == b.scale_;
  }
  friend constexpr bool operator!=(const SizeClass& a, const SizeClass& b) { return !(a == b); }
  /// Named sizes first (small, default, large), then scales in increasing order.
  friend constexpr bool operator<(const SizeClass& a, const SizeClass& b) {
    return a.name_ != b.name_ ? a.name_ < b.name_ : a.scale_ < b.scale_;
  }

 private:
  constexpr SizeClass(SizeName name, double scale) : name_(name), scale_(scale) {}

  SizeName name_ = SizeName::Default;
  double scale_ = 1.0;
};

inline constexpr SizeClass SizeClass::Small{SizeName::Small, 1.0};
inline constexpr SizeClass SizeClass::Default{SizeName::Default, 1.0};
inline constexpr SizeClass SizeClass::Large{SizeName::Large, 1.0};

/// "small", "default", "large", or the scale's canonical text: the shortest decimal that reads
/// back as the same factor, then "x" ("0.25x", "4x", "0.0625x").
std::string to_string(SizeClass size);
/// A size name or a scale ("4x", "0.25x", "1/16x", and to_string's texts); nullopt for anything
/// else. Throws InputError for a scale that is no positive finite number ("0x", "-1x", "nanx").
std::optional<SizeClass> parse_size(std::string_view text);
/// A comma-separated list of sizes, in the order given. Throws InputError naming the item for an
/// unknown or empty item, a bad scale, or a point given twice ("4x,4x", "default,1x").
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

}  // namespace pb
