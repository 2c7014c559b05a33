// The .npy reader (what `check` reads users' outputs with): what numpy writes reads back exactly,
// and every malformed or unsupported file is an InputError saying what is wrong, never a crash or
// an allocation the header asked for.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "phasebench/errors.hpp"
#include "phasebench/npy.hpp"
#include "process.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;

// A version 1.0 file with this header dict and payload (the header padded as numpy pads it).
std::string npy_file(const std::string& header_dict, const std::string& payload) {
  std::string header = header_dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + payload;
}

template <typename T>
std::string payload_of(std::initializer_list<T> values) {
  std::string bytes;
  for (T value : values) bytes.append(reinterpret_cast<const char*>(&value), sizeof(T));
  return bytes;
}

// The message of the InputError parse_npy throws for `bytes` ("" when it throws none).
std::string refusal(const std::string& bytes) {
  try {
    parse_npy(bytes);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(NpyReader, ReadsBackWhatTheWriterWrote) {
  for (ElementType type : {ElementType::Float32, ElementType::Float64, ElementType::Int64}) {
    HostArray array = HostArray::zeros({2, 3}, type);
    for (size_t i = 0; i < array.values.size(); ++i) array.values[i] = static_cast<double>(i) - 2.0;
    const NpyArray read = parse_npy(npy_bytes(array));
    EXPECT_EQ(read.dtype, element_type_name(type));
    EXPECT_EQ(read.array.shape, array.shape);
    EXPECT_EQ(read.array.values, array.values);
  }
  const NpyArray scalar = parse_npy(npy_bytes(HostArray::scalar(0.25, ElementType::Float64)));
  EXPECT_TRUE(scalar.array.shape.empty());
  EXPECT_EQ(scalar.array.values, std::vector<double>{0.25});
}

TEST(NpyReader, ReadsFloat16Exactly) {
  // 1, -2, the smallest subnormal 2^-24, 65504 (the largest finite half), +Inf
  const std::string bytes = npy_file("{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }",
                                     payload_of<uint16_t>({0x3c00, 0xc000, 0x0001, 0x7bff, 0x7c00}));
  const NpyArray read = parse_npy(bytes);
  EXPECT_EQ(read.dtype, "float16");
  EXPECT_EQ(read.array.values[0], 1.0);
  EXPECT_EQ(read.array.values[1], -2.0);
  EXPECT_EQ(read.array.values[2], std::ldexp(1.0, -24));
  EXPECT_EQ(read.array.values[3], 65504.0);
  EXPECT_TRUE(std::isinf(read.array.values[4]));
}

TEST(NpyReader, ReadsVersion2HeadersAndEmptyArrays) {
  std::string version2 = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }", "");
  version2[6] = '\x02';  // a 4-byte header length: the 2 bytes of version 1 then 2 zero bytes
  version2.insert(10, std::string("\0\0", 2));
  const NpyArray read = parse_npy(version2);
  EXPECT_EQ(read.array.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(read.array.values.empty());
}

TEST(NpyReader, RefusesEveryMalformedFileSayingWhy) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string two_floats = payload_of<float>({1, 2});
  const struct {
    const char* what;
    std::string bytes;
    const char* message;
  } cases[] = {
      {"empty", "", "not a .npy file"},
      {"not numpy", "PK\x03\x04 a zip file, not an array", "not a .npy file"},
      {"version 9", [&] { std::string b = npy_file(f4, two_floats); b[6] = '\x09'; return b; }(), "version 9.0"},
      {"header past the end", npy_file(f4, two_floats).substr(0, 20), "truncated .npy header"},
      {"truncated payload", npy_file(f4, two_floats.substr(0, 5)), "truncated .npy data"},
      {"trailing bytes", npy_file(f4, two_floats + "xyz"), "trailing bytes"},
      {"a huge shape", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000000000,), }", two_floats), "truncated .npy data"},
      {"a shape whose product overflows",
       npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (999999999999999999, 999999999999999999, 999999999999999999), }", two_floats),
       "truncated .npy data"},
      {"a 19-digit extent", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1234567890123456789,), }", two_floats), "18 digits"},
      {"a negative extent", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", two_floats), "non-negative integer"},
      {"Fortran order", npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two_floats), "Fortran order"},
      {"big-endian", npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two_floats), "big-endian"},
      {"objects", npy_file("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", two_floats), "Python objects"},
      {"complex", npy_file("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", two_floats), "is complex"},
      {"int32", npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", two_floats), "'<i4' is not read"},
      {"structured", npy_file("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,), }", two_floats), "structured"},
      {"a missing key", npy_file("{'descr': '<f4', 'shape': (2,), }", two_floats), "lacks one of"},
      {"a repeated key", npy_file("{'descr': '<f4', 'descr': '<f4', 'shape': (2,), }", two_floats), "appears twice"},
      {"an unknown key", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two_floats), "unknown key 'x'"},
      {"an open string", npy_file("{'descr: False", two_floats), "closing quote"},
      {"no dict", npy_file("np.zeros(2)", two_floats), "expected '{'"},
      {"text after the dict", npy_file(f4 + " __import__('os')", two_floats), "after the header"},
  };
  for (const auto& c : cases) {
    const std::string message = refusal(c.bytes);
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": got \"" << message << "\"";
  }
}

TEST(NpyReader, ReadsWhatNumpySavesAndNamesTheFileItRefuses) {
  const fs::path dir = testing::fresh_temp_path("npy-numpy");
  fs::create_directories(dir);
  const auto saved = testing::run_command(
      "cd " + dir.string() + " && /usr/bin/python3 -c \"import numpy as np; x = np.arange(6).reshape(2, 3) / 8; "
      "np.save('f2.npy', x.astype(np.float16)); np.save('f4.npy', x.astype(np.float32)); np.save('f8.npy', x); "
      "np.save('fortran.npy', np.asfortranarray(x)); np.save('big.npy', x.astype('>f8'))\" 2>&1");
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  for (const char* name : {"f2.npy", "f4.npy", "f8.npy"}) {
    const NpyArray read = read_npy(dir / name);
    EXPECT_EQ(read.array.shape, (std::vector<int64_t>{2, 3})) << name;
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(read.array.values[i], static_cast<double>(i) / 8) << name;
  }
  EXPECT_THROW(read_npy(dir / "fortran.npy"), InputError);
  try {
    read_npy(dir / "big.npy");
    ADD_FAILURE() << "a big-endian file was read";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("big.npy"), std::string::npos) << error.what();
  }
  EXPECT_THROW(read_npy(dir / "absent.npy"), InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pb
