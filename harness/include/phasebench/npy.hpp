#pragma once
// NumPy .npy files: the writer (so `dump` files load with numpy.load unchanged) and the reader
// (so `check` reads what the user's own code saved with numpy.save). The reader trusts nothing in
// a file: every header field is validated and the payload must be exactly as long as the header
// says, before anything is allocated from it.

#include <filesystem>
#include <string>
#include <string_view>

#include "phasebench/arrays.hpp"

namespace pb {

/// The bytes of a .npy file holding `array` in its element type (little-endian, C order).
std::string npy_bytes(const HostArray& array);

/// A .npy file read back: its values in fp64 (as every HostArray holds them) and the dtype the
/// file stored them in ("float16", "float32", "float64" or "int64").
struct NpyArray {
  HostArray array;
  std::string dtype;
};

/// Parses the bytes of a .npy file (format 1.0, 2.0 or 3.0; little-endian float16, float32,
/// float64 or int64; C order). Throws InputError saying what is wrong (not naming the file).
NpyArray parse_npy(std::string_view bytes);

/// Reads and parses the .npy file at `path`; an InputError names the file.
NpyArray read_npy(const std::filesystem::path& path);

}  // namespace pb
