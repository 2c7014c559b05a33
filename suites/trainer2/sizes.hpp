#pragma once
// The trainer2 size table (also in reference/trainer2/trainer2.hpp and docs/trainer2.md), shared
// by every trainer2 workload.

#include <stdexcept>

#include "phasebench/workload.hpp"

namespace pb::suites::trainer2 {

struct Trainer2Size {
  int batch;       // B
  int tokens;      // T
  int state_dim;   // d
  int bank_rows;   // C
  int field_nx, field_ny, field_channels;  // Nx, Ny, D (the field is Nx x Ny x D x D complex)
  int window_steps;  // W

  int candidates() const { return tokens + bank_rows; }  // K = T + C
};

inline Trainer2Size trainer2_size(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return {3, 7, 12, 9, 6, 5, 3, 5};
    case SizeName::Default:
      return {16, 128, 256, 2048, 28, 28, 16, 64};
    case SizeName::Large:
      return {16, 1024, 768, 2048, 28, 28, 16, 64};
    case SizeName::Scaled: {
      // A scale grows the batch (B rows, at least one); the token window, state width, bank,
      // field and window steps are the default's.
      Trainer2Size scaled = trainer2_size(SizeClass::Default);
      scaled.batch = static_cast<int>(scaling::count(scaled.batch, size.scale()));
      return scaled;
    }
    case SizeName::Random: {
      // d >= n = 8: the coordinates are O's first n values; K = T + C candidates of any count,
      // so the candidate rows cross the 16-lane blocks; any field grid (the stencil is periodic).
      // C > B >= 2: train_step's write of B rows wraps around the bank and leaves its pointer
      // off row 0 (a pointer of 0 would be an output of zeros).
      const auto draw = [size](int dimension, int minimum, int maximum) {
        return static_cast<int>(random_shape::count(size, dimension, minimum, maximum));
      };
      const int batch = draw(0, 2, 6);
      return {batch,         draw(1, 1, 24), draw(2, 8, 40), draw(3, batch + 1, 40),
              draw(4, 1, 8), draw(5, 1, 8),  draw(6, 1, 4),  draw(7, 1, 6)};
    }
  }
  throw std::invalid_argument("unknown trainer2 size");
}

}  // namespace pb::suites::trainer2
