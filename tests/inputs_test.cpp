// Seeded inputs are the same everywhere; .npy files are what numpy expects.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "phasebench/npy.hpp"
#include "phasebench/rng.hpp"
#include "phasebench/workload.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb {
namespace {

TEST(Inputs, SameSeedSameValuesOtherSeedOtherValues) {
  const HostArray a = normal_array(7, "x", {100}, 0, 1);
  EXPECT_EQ(a.values, normal_array(7, "x", {100}, 0, 1).values);
  EXPECT_NE(a.values, normal_array(8, "x", {100}, 0, 1).values);
  EXPECT_NE(a.values, normal_array(7, "y", {100}, 0, 1).values);  // streams are independent
}

TEST(Inputs, KnownFirstValuesPinTheGenerator) {
  // Computed independently (a Python transcription of splitmix64 + FNV-1a stream seeding). If
  // these change, every dumped input and every baseline changes: bump the results schema.
  EXPECT_EQ(SeededGenerator(1, "pin").next_bits(), 0x3cf778dd88c88beeull);
  const HostArray g = uniform_array(1, "trainer2/lior_step/g", {3}, 0.5, 1.5);
  EXPECT_EQ(g.values, (std::vector<double>{1.2271748781204224, 1.2441328763961792, 1.1238523721694946}));
}

TEST(Inputs, Float32InputsAreExactlyRepresentableInFloat) {
  for (double value : normal_array(3, "f", {1000}, 0, 1).values)
    EXPECT_EQ(value, static_cast<double>(static_cast<float>(value)));
}

TEST(Inputs, NormalMomentsAreRoughlyRight) {
  const HostArray a = normal_array(11, "moments", {20000}, 2.0, 3.0);
  double sum = 0, sum_sq = 0;
  for (double v : a.values) sum += v;
  const double mean = sum / a.values.size();
  for (double v : a.values) sum_sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 2.0, 0.1);
  EXPECT_NEAR(std::sqrt(sum_sq / a.values.size()), 3.0, 0.1);
}

TEST(Inputs, EveryRegisteredWorkloadMakesDeterministicNonZeroInputs) {
  for (const auto& workload : registered_workloads()) {
    const ArrayMap first = workload->make_inputs(SizeClass::Small, 5);
    const ArrayMap again = workload->make_inputs(SizeClass::Small, 5);
    ASSERT_FALSE(first.empty()) << workload->full_name();
    for (const auto& [name, array] : first) {
      EXPECT_EQ(array.values, again.at(name).values) << workload->full_name() << " " << name;
      EXPECT_EQ(static_cast<int64_t>(array.values.size()), array.numel());
      bool any_nonzero = false;
      for (double v : array.values) any_nonzero |= v != 0;
      EXPECT_TRUE(any_nonzero) << workload->full_name() << " input " << name << " is all zeros";
    }
  }
}

// What arrays.hpp promises: an input holds exactly the values its element type can, so the fp64
// oracle computes from the very numbers an fp32 variant (or the user's code, from a dump) gets. A
// value adjusted after rounding breaks it: trainer2's empty bank rows once got +1e4 after their
// N(0,1) was rounded, and the oracle's bank_coord then differed from the dumped float32 input by
// up to 5e-4 (found by the numpy check of a default-size dump).
TEST(Inputs, EveryWorkloadsInputsAreExactlyWhatTheirElementTypeHolds) {
  const std::vector<std::pair<SizeClass, uint64_t>> problems{
      {SizeClass::Small, 1}, {SizeClass::Small, 2}, {SizeClass::Small, 3}, {SizeClass::Default, 1}};
  for (const auto& workload : registered_workloads())
    for (const auto& [size, seed] : problems)
      for (const auto& [name, array] : workload->make_inputs(size, seed)) {
        int64_t off = 0;
        for (double value : array.values) off += round_to(array.element_type, value) != value;
        EXPECT_EQ(off, 0) << workload->full_name() << " " << to_string(size) << " seed " << seed << " input " << name
                          << ": values not representable as " << element_type_name(array.element_type);
      }
}

TEST(Npy, HeaderIsVersion1AlignedTo64Bytes) {
  HostArray array = HostArray::zeros({2, 3}, ElementType::Float32);
  array.values = {1, 2, 3, 4, 5, 6};
  const std::string bytes = npy_bytes(array);
  ASSERT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(bytes[6], 1);
  const size_t header_length = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  const size_t data_start = 10 + header_length;
  EXPECT_EQ(data_start % 64, 0u);
  EXPECT_EQ(bytes[data_start - 1], '\n');
  const std::string header = bytes.substr(10, header_length);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (2, 3,)"), std::string::npos) << header;
  ASSERT_EQ(bytes.size(), data_start + 6 * sizeof(float));
  float last = 0;
  std::memcpy(&last, bytes.data() + data_start + 5 * sizeof(float), sizeof(float));
  EXPECT_EQ(last, 6.0f);
}

TEST(Npy, ScalarsHaveAnEmptyShape) {
  const std::string bytes = npy_bytes(HostArray::scalar(2.5, ElementType::Float64));
  EXPECT_NE(bytes.find("'shape': ()"), std::string::npos);
  double value = 0;
  std::memcpy(&value, bytes.data() + bytes.size() - 8, 8);
  EXPECT_EQ(value, 2.5);
}

// trainer2/rotor_update's even seeds put pair 0 on the wrap's boundary: no update (u_0 = u_1 = 0,
// r = 0) and an angle of float(pi) exactly, where fp32's fmod(theta + pi, 2 pi) is exactly 0, so
// `< 0` and `<= 0` wrap it to -pi and +pi. Odd seeds keep every angle as drawn.
TEST(Inputs, RotorUpdatesEvenSeedsPutAnAngleExactlyOnTheWrapBoundary) {
  const auto workload = find_workload("trainer2/rotor_update");
  const float pi = static_cast<float>(reference::trainer2::kPi);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const ArrayMap inputs = workload->make_inputs(SizeClass::Small, seed);
    const std::vector<double>& u = require(inputs, "u").values;
    const double theta = require(inputs, "theta").values.at(0);
    if (seed % 2 == 0) {
      EXPECT_EQ(theta, double(pi)) << "seed " << seed;
      EXPECT_EQ(u.at(0), 0.0) << "seed " << seed;
      EXPECT_EQ(u.at(1), 0.0) << "seed " << seed;
      EXPECT_EQ(std::fmod(pi + pi, static_cast<float>(2 * reference::trainer2::kPi)), 0.f);
      EXPECT_EQ(reference::trainer2::wrap_angle(pi), -pi);
    } else {
      EXPECT_NE(theta, double(pi)) << "seed " << seed;
      EXPECT_NE(u.at(0), 0.0) << "seed " << seed;
    }
  }
}

// An output buffer sized from its shape, and handed back only with a shape that holds it.
TEST(OutputBuffers, NanFloatsHoldsTheShapesCountOfNaNsAndFromFloatsChecksTheCount) {
  const std::vector<float> buffer = nan_floats({2, 3});
  ASSERT_EQ(buffer.size(), 6u);
  for (float v : buffer) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(nan_floats({}).size(), 1u);  // a scalar
  EXPECT_EQ(HostArray::from_floats({2, 3}, std::vector<float>(6, 1.f)).numel(), 6);
  EXPECT_THROW(HostArray::from_floats({2, 3}, std::vector<float>(5, 1.f)), std::invalid_argument);
}

}  // namespace
}  // namespace pb
