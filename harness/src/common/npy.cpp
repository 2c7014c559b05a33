#include "phasebench/npy.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>

#include "phasebench/errors.hpp"

namespace pb {
namespace {

std::string shape_tuple(const HostArray& array) {
  if (array.shape.empty()) return "()";
  std::string text = "(";
  for (int64_t extent : array.shape) text += std::to_string(extent) + ", ";
  text.erase(text.size() - 1);  // "(3,)" and "(3, 4,)": both valid Python tuples
  return text + ")";
}

template <typename T>
void append_values(std::string& out, const HostArray& array) {
  for (double value : array.values) {
    const T converted = static_cast<T>(value);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &converted, sizeof(T));
    out.append(bytes, sizeof(T));
  }
}

}  // namespace

// Header: magic, version 1.0, little-endian header length, a Python dict literal padded with
// spaces and ending in '\n' so that the data starts on a 64-byte boundary.
std::string npy_bytes(const HostArray& array) {
  std::string header = "{'descr': '" + std::string(numpy_dtype(array.element_type)) +
                       "', 'fortran_order': False, 'shape': " + shape_tuple(array) + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  switch (array.element_type) {
    case ElementType::Float32: append_values<float>(out, array); break;
    case ElementType::Float64: append_values<double>(out, array); break;
    case ElementType::Int64: append_values<int64_t>(out, array); break;
  }
  return out;
}

}  // namespace pb

// ---- reading ---------------------------------------------------------------------------------
//
// The format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor version byte, the
// header's length (2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), the header
// (a Python dict literal with the keys 'descr', 'fortran_order' and 'shape', padded with spaces
// and ending in '\n'), then the values. Only the literals numpy writes are accepted, parsed by
// hand: the header is data from outside, never evaluated.

namespace pb {
namespace {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A cursor over the header's dict literal; every method throws InputError on what it does not expect.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  NpyHeader parse() {
    NpyHeader header;
    std::vector<std::string> seen;
    expect('{');
    while (!accept('}')) {
      const std::string key = quoted_string("a key");
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) fail("key '" + key + "' appears twice");
      seen.push_back(key);
      expect(':');
      if (key == "descr") header.descr = descr();
      else if (key == "fortran_order") header.fortran_order = boolean();
      else if (key == "shape") header.shape = shape();
      else fail("unknown key '" + key + "' (a .npy header has descr, fortran_order and shape)");
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    if (seen.size() != 3) fail("the header lacks one of descr, fortran_order and shape");
    skip_spaces();
    if (position_ != text_.size()) fail("unexpected text after the header's closing brace");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("bad .npy header at character " + std::to_string(position_) + ": " + what);
  }

  void skip_spaces() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\n' ||
                                        text_[position_] == '\t' || text_[position_] == '\r'))
      ++position_;
  }

  bool accept(char c) {
    skip_spaces();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }

  bool at_quote() {
    skip_spaces();
    return position_ < text_.size() && (text_[position_] == '\'' || text_[position_] == '"');
  }

  std::string quoted_string(const std::string& what) {
    if (!at_quote()) fail("expected " + what + " in quotes");
    const char quote = text_[position_++];
    const size_t end = text_.find(quote, position_);
    if (end == std::string_view::npos) fail("a string without its closing quote");
    const std::string_view value = text_.substr(position_, end - position_);
    if (value.find('\\') != std::string_view::npos) fail("escapes in strings are not read");
    position_ = end + 1;
    return std::string(value);
  }

  std::string descr() {
    if (!at_quote()) fail("descr is not a dtype string (structured and record dtypes are not read)");
    return quoted_string("the dtype");
  }

  bool boolean() {
    skip_spaces();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
      if (text_.substr(position_, word.size()) == word) {
        position_ += word.size();
        return value;
      }
    fail("fortran_order is neither True nor False");
  }

  std::vector<int64_t> shape() {
    std::vector<int64_t> extents;
    expect('(');
    while (!accept(')')) {
      extents.push_back(extent());
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return extents;
  }

  // A non-negative integer of at most 18 digits, so that it fits an int64 without overflow.
  int64_t extent() {
    skip_spaces();
    const size_t start = position_;
    int64_t value = 0;
    while (position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9') {
      if (position_ - start == 18) fail("a shape extent of more than 18 digits");
      value = value * 10 + (text_[position_++] - '0');
    }
    if (position_ == start) fail("a shape extent that is not a non-negative integer");
    return value;
  }

  std::string_view text_;
  size_t position_ = 0;
};

// IEEE binary16 to double, exactly (every half value is a double).
double half_to_double(uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude;
  if (exponent == 0) magnitude = std::ldexp(mantissa, -24);  // subnormal or zero
  else if (exponent == 31) magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  else magnitude = std::ldexp(mantissa + 1024, exponent - 25);
  return sign ? -magnitude : magnitude;
}

// Stored values (little-endian, as this machine is) to doubles; `values` is already sized.
template <typename T>
void decode_values(std::string_view payload, std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    T value;
    std::memcpy(&value, payload.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, uint16_t>) values[i] = half_to_double(value);
    else values[i] = static_cast<double>(value);
  }
}

struct StoredType {
  const char* descr;
  const char* dtype;
  size_t bytes;
  ElementType element_type;  // what the values become in a HostArray (float16 travels as float32)
  void (*decode)(std::string_view payload, std::vector<double>& values);
};

constexpr StoredType kReadableTypes[] = {{"<f2", "float16", 2, ElementType::Float32, decode_values<uint16_t>},
                                         {"<f4", "float32", 4, ElementType::Float32, decode_values<float>},
                                         {"<f8", "float64", 8, ElementType::Float64, decode_values<double>},
                                         {"<i8", "int64", 8, ElementType::Int64, decode_values<int64_t>}};

const StoredType& stored_type(const std::string& descr) {
  for (const StoredType& type : kReadableTypes)
    if (descr == type.descr) return type;
  if (!descr.empty() && descr[0] == '>')
    throw InputError("dtype '" + descr + "' is big-endian: save it little-endian (x.astype(x.dtype.newbyteorder('<')))");
  if (descr.find('O') != std::string::npos)
    throw InputError("dtype '" + descr + "' holds Python objects, not numbers: save a numeric array "
                     "(np.asarray(x, dtype=np.float32))");
  if (descr.find('c') != std::string::npos)
    throw InputError("dtype '" + descr + "' is complex: phasebench stores a complex array as real and imaginary "
                     "parts along a last axis of 2 (np.stack([z.real, z.imag], axis=-1))");
  throw InputError("dtype '" + descr + "' is not read (phasebench reads float16, float32, float64 and int64)");
}

uint32_t little_endian(std::string_view bytes, size_t at, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

// The header's text, after checking the magic, the version and that the header fits the file.
std::string_view header_text(std::string_view bytes, size_t& payload_start) {
  const std::string_view magic("\x93NUMPY", 6);
  if (bytes.size() < 10 || bytes.substr(0, 6) != magic)
    throw InputError("not a .npy file (it does not start with \\x93NUMPY)");
  const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw InputError(".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                     " is not read (1.0, 2.0 and 3.0 are)");
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_bytes) throw InputError("truncated .npy header");
  const size_t header_length = little_endian(bytes, 8, length_bytes);
  const size_t header_start = 8 + length_bytes;
  if (header_length > bytes.size() - header_start)
    throw InputError("truncated .npy header: it claims " + std::to_string(header_length) + " bytes, the file has " +
                     std::to_string(bytes.size() - header_start) + " after the length");
  payload_start = header_start + header_length;
  return bytes.substr(header_start, header_length);
}

// The element count of `shape`, checked against the payload before anything is allocated.
size_t checked_count(const std::vector<int64_t>& shape, size_t element_bytes, size_t payload_bytes) {
  const std::string shape_text = HostArray{shape, {}, ElementType::Float32}.shape_string();
  const size_t available = payload_bytes / element_bytes;
  size_t count = 1;
  for (int64_t extent : shape) {
    if (extent == 0) {
      count = 0;  // an empty array; still checked against the payload below
      break;
    }
    if (count > available / static_cast<size_t>(extent))
      throw InputError("truncated .npy data: shape " + shape_text + " needs more than the " +
                       std::to_string(payload_bytes) + " bytes after the header");
    count *= static_cast<size_t>(extent);
  }
  if (count * element_bytes != payload_bytes)
    throw InputError((count * element_bytes < payload_bytes ? "trailing bytes after the .npy data: shape "
                                                            : "truncated .npy data: shape ") +
                     shape_text + " needs " + std::to_string(count * element_bytes) + " bytes, the file has " +
                     std::to_string(payload_bytes) + " after the header");
  return count;
}

}  // namespace

NpyArray parse_npy(std::string_view bytes) {
  size_t payload_start = 0;
  const NpyHeader header = HeaderParser(header_text(bytes, payload_start)).parse();
  const StoredType& type = stored_type(header.descr);
  if (header.fortran_order)
    throw InputError("the array is in Fortran order: save a C-order array (np.ascontiguousarray(x))");
  const std::string_view payload = bytes.substr(payload_start);
  NpyArray result;
  result.dtype = type.dtype;
  result.array.shape = header.shape;
  result.array.element_type = type.element_type;
  result.array.values.resize(checked_count(header.shape, type.bytes, payload.size()));
  type.decode(payload, result.array.values);
  return result;
}

NpyArray read_npy(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) throw InputError(path.string() + " is not a file");
  const auto size = std::filesystem::file_size(path, error);
  std::string bytes(error ? 0 : size, '\0');
  std::ifstream in(path, std::ios::binary);
  if (error || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw InputError("cannot read " + path.string());
  try {
    return parse_npy(bytes);
  } catch (const InputError& bad) {
    throw InputError(path.string() + ": " + bad.what());
  }
}

}  // namespace pb
