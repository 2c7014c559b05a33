// The GPU roofline probe (backends/cuda/device_probe.hpp) on the host: the per-element bodies its
// kernels run, over their whole index space; the bytes and flops counted per launch; the array
// sizes; the device identity's text; and, where no GPU is present, the probe's answer through the
// cuda backend: no ceilings, with the runtime's own reason, never a throw. Not tested here: the
// kernels, the timing and the cuBLAS GEMM on a device (no GPU on these machines).

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "backends/cuda/device_probe.hpp"
#include "phasebench/backend.hpp"
#include "roofline/roofline.hpp"

namespace pb {
namespace {

namespace probe = cuda_backend::probe;

// Every sweep of the L2 triad, as the kernel's threads walk it (grid-stride positions, rotated by
// the sweep's offset), writes every element exactly once with the triad's value: what
// triad_bytes() counts.
TEST(GpuProbe, EveryRotatedSweepTouchesEachElementOnceWithTheTriadsValue) {
  for (const int64_t floats : {int64_t{256}, int64_t{256 * 37}, int64_t{256 * 1000}}) {
    const int64_t stride = 256 * 6;  // 6 blocks of 256 threads
    std::vector<float> a(floats, 0.0f), b(floats, 1.0f), c(floats, 2.0f);
    for (int sweep = 0; sweep < 5; ++sweep) {
      std::vector<int> touched(floats, 0);
      const int64_t offset = probe::sweep_offset(sweep, probe::kBlock, floats);
      ASSERT_GE(offset, 0);
      ASSERT_LT(offset, floats);
      for (int64_t thread = 0; thread < stride; ++thread)
        for (int64_t position = thread; position < floats; position += stride) {
          const int64_t i = probe::rotated_index(position, offset, floats);
          ++touched[i];
          a[i] = probe::triad_value(b[i], c[i], 3.0f);
        }
      for (int64_t i = 0; i < floats; ++i) ASSERT_EQ(touched[i], 1) << "element " << i << " sweep " << sweep;
    }
    for (float value : a) ASSERT_EQ(value, 7.0f);
  }
  EXPECT_DOUBLE_EQ(probe::triad_bytes(1000, 1), 12000);
  EXPECT_DOUBLE_EQ(probe::triad_bytes(1000, 5), 60000);
}

// The fp32 kernel's body computes what its recurrence says (no chain dropped), and the flops
// counted are one FMA per chain and step.
TEST(GpuProbe, TheFmaChainsComputeTheirRecurrenceAndAreCountedAsTwoFlopsEach) {
  const int steps = 1000;
  const float multiplier = 0.9999f, addend = 1e-4f;
  double expected = 0;
  for (int chain = 0; chain < probe::kFmaChains; ++chain) {
    double acc = 5.0 + chain;
    for (int step = 0; step < steps; ++step) acc = acc * multiplier + addend;
    expected += acc;
  }
  EXPECT_NEAR(probe::fma_chains(5.0f, multiplier, addend, steps), expected, 1e-4 * expected);
  EXPECT_DOUBLE_EQ(probe::fma_flops(256, steps), 2.0 * probe::kFmaChains * steps * 256);
  EXPECT_DOUBLE_EQ(probe::gemm_flops(8192, 8192, 8192), 2.0 * 8192.0 * 8192.0 * 8192.0);
}

TEST(GpuProbe, TheMemoryArraysOutgrowTheL2AndFitTheFreeMemory) {
  const double l2 = 50.0 * (1 << 20), gib = 1024.0 * 1024 * 1024;
  const int64_t floats = probe::memory_array_floats(l2, 140 * gib);
  EXPECT_DOUBLE_EQ(floats * 4.0, 8 * l2);  // 8x the L2 each
  EXPECT_EQ(floats % probe::kBlock, 0);
  const int64_t small_l2 = probe::memory_array_floats(1 << 20, 140 * gib);
  EXPECT_DOUBLE_EQ(small_l2 * 4.0, probe::kMinMemoryArrayBytes);  // at least 256 MiB
  const int64_t tight = probe::memory_array_floats(l2, 1.5 * gib);  // a sixth of the free memory
  EXPECT_LE(tight * 4.0 * 6, 1.5 * gib);
  EXPECT_GE(tight * 4.0, 2 * l2);
  EXPECT_EQ(probe::memory_array_floats(l2, 0.5 * gib), 0);  // cannot outgrow the L2: no ceiling
  const int64_t l2_floats = probe::l2_array_floats(l2);
  EXPECT_LE(3 * l2_floats * 4.0, l2 / 2);
  EXPECT_GT(3 * l2_floats * 4.0, l2 / 2 * 0.99);
  EXPECT_GE(probe::triad_bytes(l2_floats, probe::l2_sweeps(l2_floats)), 0.9e9);
}

TEST(GpuProbe, TheUuidIsWrittenAsNvidiaSmiWritesIt) {
  const unsigned char uuid[16] = {0x8f, 0x2c, 0x4d, 0x1e, 0x00, 0x11, 0x22, 0x33,
                                  0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
  EXPECT_EQ(probe::uuid_text(uuid), "GPU-8f2c4d1e-0011-2233-4455-66778899aabb");
  const unsigned char unknown[16] = {};
  EXPECT_EQ(probe::uuid_text(unknown), "");
}

// Without a GPU (these machines): the probe, asked through the cuda backend as `run` asks it,
// answers "no ceilings" with the runtime's own reason, and the run records that reason.
TEST(GpuProbe, WithoutADeviceThereAreNoCeilingsAndTheRuntimesReason) {
  const std::shared_ptr<Backend> cuda = find_backend("cuda");
  if (!cuda) GTEST_SKIP() << "the cuda backend is not built";
  const std::string reason = cuda->unavailable_reason();
  if (reason.empty()) GTEST_SKIP() << "a CUDA device is present: the probe would run";
  const DeviceIdentity identity = cuda->device_ceilings_identity("cuda");
  EXPECT_EQ(identity.why_not, reason);
  const DeviceProbe measured = cuda->measure_device_ceilings("cuda");
  EXPECT_FALSE(measured.ceilings);
  EXPECT_EQ(measured.why_not, reason);
  roofline::Ceilings machine;
  std::ostringstream log;
  roofline::add_device_ceilings(machine, {cuda}, log);
  EXPECT_TRUE(machine.devices.empty());
  EXPECT_EQ(machine.devices_without_ceilings.at("cuda"), reason);
  EXPECT_NE(cuda->device_ceilings_identity("cpu").why_not, "");  // no probe for other devices
}

}  // namespace
}  // namespace pb
