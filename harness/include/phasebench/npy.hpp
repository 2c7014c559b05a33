#pragma once
// NumPy .npy (format 1.0) output, so `dump` files load with numpy.load unchanged.

#include <string>

#include "phasebench/arrays.hpp"

namespace pb {

/// The bytes of a .npy file holding `array` in its element type (little-endian, C order).
std::string npy_bytes(const HostArray& array);

}  // namespace pb
