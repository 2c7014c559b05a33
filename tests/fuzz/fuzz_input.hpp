#pragma once
// What every fuzz harness shares: the bytes libFuzzer gives written to a file of this process
// (the readers take paths, as the commands do), and the one outcome allowed besides success,
// InputError. Any other exception, a crash or a sanitizer report is a finding.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "phasebench/errors.hpp"

namespace pb::fuzz {

/// A directory of this process, made once, for the files a harness writes.
inline const std::filesystem::path& scratch_directory() {
  static const std::filesystem::path dir = [] {
    const auto path = std::filesystem::temp_directory_path() / ("phasebench-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

inline void write_bytes(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

/// Runs `read`; bad input (InputError) is an expected outcome, anything else escapes to libFuzzer.
template <typename Read>
void expect_read_or_refusal(Read&& read) {
  try {
    read();
  } catch (const InputError&) {
  }
}

}  // namespace pb::fuzz
