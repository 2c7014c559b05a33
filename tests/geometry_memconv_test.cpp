// geometry/lior_memory_conv: the fp64 reference agrees with an independent numpy implementation
// of the original, the inputs are never degenerate, the CUDA/Kokkos bodies compute the reference
// on the host (direct and FFT ladders), the seed's claim (no host sync once the taps
// are built on the device) holds on every backend that runs here, and a variant with one wrong
// line is caught.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "broken_variant.hpp"
#include "engine/case_runner.hpp"
#include "optimized/geometry/lior_memory_conv_bodies.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"
#include "suites/geometry/lior_memory_conv.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
namespace conv = pb::suites::geometry::lior_memory_conv;
namespace ref = conv::ref;

TEST(GeometryMemconvDump, AnIndependentNumpyImplementationAgrees) {
  const fs::path out = testing::fresh_temp_path("geometry-memconv-dump");
  const auto dumped = testing::run_phasebench("dump --workload " + conv::kWorkload + " --size small --seed 5 --out " +
                                              out.string());
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR +
                                            "/python/check_lior_memory_conv_dump.py " + out.string() + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("agree"), std::string::npos) << checked.output;
  fs::remove_all(out);
}

// The memory term must matter: |out - w0 x| is a sizeable part of |out| at every size the tests
// build, and the taps are the definition's (positive sum, k_0 the largest).
TEST(GeometryMemconvInputs, TheMemoryTermIsNeverDegenerate) {
  const auto workload = find_workload(conv::kWorkload);
  for (SizeClass size : {SizeClass::Small, SizeClass::Default}) {
    const ArrayMap in = workload->make_inputs(size, 1);
    const ArrayMap out = workload->reference_fp64(in);
    const HostArray& x = in.at(conv::kInput);
    const HostArray& y = out.at(conv::kOutput);
    double memory = 0, total = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      memory += std::pow(y.values[i] - conv::kernel_parameter(ref::kW0) * x.values[i], 2);
      total += y.values[i] * y.values[i];
    }
    EXPECT_GT(memory / total, 0.05) << to_string(size);
  }
  std::vector<double> p(ref::kParams), k(16);
  for (int i = 0; i < ref::kParams; ++i) p[i] = conv::kernel_parameter(i);
  ref::taps<double>(p.data(), 16, k.data());
  EXPECT_EQ(std::max_element(k.begin(), k.end()) - k.begin(), 0);
}

// ---- the CUDA and Kokkos bodies, run on the host over the whole index space --------------------

namespace body = pb::optimized::geometry::lior_memory_conv;

struct SmallCase {
  SmallCase() : in(find_workload(conv::kWorkload)->make_inputs(SizeClass::Small, 2)) {
    shape = conv::conv_shape(SizeClass::Small);
    x = in.at(conv::kInput).to_floats();
    p = in.at(conv::kKernelParams).to_floats();
    expected.assign(x.size(), 0.f);
    ref::lior_memory_conv<float>(p.data(), x.data(), shape.batch, shape.length, shape.channels, expected.data());
  }
  ArrayMap in;
  conv::ConvShape shape{};
  std::vector<float> x, p, expected;
};

// device_taps + direct: the taps bodies (the sum tail first, as the kernels reduce) and the row body.
TEST(GeometryMemconvBodies, TheDirectLadderComputesTheReference) {
  const SmallCase c;
  const int64_t n = c.shape.length;
  std::vector<float> taps(n), out(c.x.size());
  for (int64_t t = 0; t < n; ++t) body::raw_tap_body(t, c.p.data(), taps.data());
  float sum = 0;
  for (int64_t t = n - 1; t >= 0; --t) sum += taps[t];
  for (int64_t t = 0; t < n; ++t) body::normalize_tap_body(t, &sum, taps.data());
  for (int64_t row = 0; row < c.shape.batch * n; ++row)
    body::direct_body(row, taps.data(), c.x.data(), n, c.shape.channels, c.p[ref::kW0], out.data());
  EXPECT_EQ(out, c.expected);
}

// fft_conv: the pad, pointwise and blend bodies around a naive real DFT of length L = 2N.
TEST(GeometryMemconvBodies, TheFftLadderComputesTheReference) {
  const SmallCase c;
  const int64_t n = c.shape.length, C = c.shape.channels, L = c.shape.fft_length(), bins = L / 2 + 1;
  const int64_t lines = c.shape.batch * C;
  std::vector<float> taps(n);
  ref::taps<float>(c.p.data(), n, taps.data());
  std::vector<float> xpad(lines * L, 0.f), kpad(L, 0.f), spec(2 * lines * bins), kspec(2 * bins), ypad(lines * L);
  for (int64_t i = 0; i < int64_t(c.x.size()); ++i) body::pad_body(i, c.x.data(), n, C, L, xpad.data());
  std::copy(taps.begin(), taps.end(), kpad.begin());
  const double pi = std::acos(-1.0);
  const auto rdft = [&](const float* line, float* out) {  // out: bins (re, im) pairs
    for (int64_t f = 0; f < bins; ++f) {
      double re = 0, im = 0;
      for (int64_t t = 0; t < L; ++t) {
        re += line[t] * std::cos(2 * pi * f * t / L);
        im -= line[t] * std::sin(2 * pi * f * t / L);
      }
      out[2 * f] = float(re);
      out[2 * f + 1] = float(im);
    }
  };
  rdft(kpad.data(), kspec.data());
  for (int64_t line = 0; line < lines; ++line) rdft(xpad.data() + line * L, spec.data() + 2 * line * bins);
  for (int64_t i = 0; i < lines * bins; ++i) body::pointwise_body(i, kspec.data(), bins, 1.f / float(L), spec.data());
  for (int64_t line = 0; line < lines; ++line)  // unnormalized inverse (the 1/L is in pointwise)
    for (int64_t t = 0; t < L; ++t) {
      double v = 0;
      for (int64_t f = 0; f < bins; ++f) {
        const double weight = (f == 0 || 2 * f == L) ? 1 : 2;
        const float* z = spec.data() + 2 * (line * bins + f);
        v += weight * (z[0] * std::cos(2 * pi * f * t / L) - z[1] * std::sin(2 * pi * f * t / L));
      }
      ypad[line * L + t] = float(v);
    }
  std::vector<float> out(c.x.size());
  for (int64_t i = 0; i < int64_t(out.size()); ++i)
    body::blend_body(i, c.x.data(), ypad.data(), n, C, L, c.p[ref::kW0], out.data());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], c.expected[i], 1e-5) << i;
}

// blocked_fft: the chunk loops write what the whole-buffer bodies write, line for line, on a shape
// whose chunks of 4 lines cross batch rows (C = 5) and end in a shorter chunk (15 lines); a chunk
// leaves its padding and every other line of out alone.
TEST(GeometryMemconvBodies, TheChunkLoopsComputeWhatTheWholeBufferBodiesDo) {
  constexpr int64_t kChunk = 4;
  const int64_t batch = 3, n = 7, C = 5, L = 2 * n, bins = L / 2 + 1, lines = batch * C, values = batch * n * C;
  std::vector<float> x(values), y(lines * L), spec(2 * lines * bins), kspec(2 * bins);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(0.7 * double(i)) + 0.1 * double(i % 3));
  for (size_t i = 0; i < y.size(); ++i) y[i] = float(std::cos(0.3 * double(i)));
  for (size_t i = 0; i < spec.size(); ++i) spec[i] = float(std::sin(1.3 * double(i)));
  for (size_t i = 0; i < kspec.size(); ++i) kspec[i] = float(std::cos(0.9 * double(i)) - 0.2);
  const float w0 = 0.3f, inv_L = 1.f / float(L), kSentinel = 7.f;

  std::vector<float> xpad(lines * L, 0.f), whole_spec = spec, whole_out(values);
  for (int64_t i = 0; i < values; ++i) body::pad_body(i, x.data(), n, C, L, xpad.data());
  for (int64_t i = 0; i < lines * bins; ++i) body::pointwise_body(i, kspec.data(), bins, inv_L, whole_spec.data());
  for (int64_t i = 0; i < values; ++i) body::blend_body(i, x.data(), y.data(), n, C, L, w0, whole_out.data());

  std::vector<float> out(values, std::numeric_limits<float>::quiet_NaN());
  for (int64_t first = 0; first < lines; first += kChunk) {
    const int64_t count = std::min(kChunk, lines - first);
    std::vector<float> pad(kChunk * L, kSentinel), chunk_spec(spec.begin() + 2 * first * bins, spec.end());
    std::vector<float> before = out;
    if (count == kChunk) {
      body::pad_lines<kChunk>(x.data(), n, C, L, first, count, pad.data());
      body::blend_lines<kChunk>(x.data(), y.data() + first * L, n, C, L, first, count, w0, out.data());
    } else {
      body::pad_lines(x.data(), n, C, L, first, count, pad.data());
      body::blend_lines(x.data(), y.data() + first * L, n, C, L, first, count, w0, out.data());
    }
    body::multiply_spectra(kspec.data(), bins, count, inv_L, chunk_spec.data());
    for (int64_t l = 0; l < kChunk; ++l)
      for (int64_t t = 0; t < L; ++t) {
        const float expected = l < count && t < n ? xpad[(first + l) * L + t] : kSentinel;
        ASSERT_EQ(pad[l * L + t], expected) << "chunk from line " << first << ", line " << l << ", t " << t;
      }
    for (int64_t i = 0; i < 2 * count * bins; ++i)
      ASSERT_EQ(chunk_spec[i], whole_spec[2 * first * bins + i]) << "chunk from line " << first << ", value " << i;
    for (int64_t i = 0; i < 2 * (lines - first - count) * bins; ++i)  // past the chunk: untouched
      ASSERT_EQ(chunk_spec[2 * count * bins + i], spec[2 * (first + count) * bins + i]) << first;
    for (int64_t i = 0; i < values; ++i) {
      const int64_t line = (i / (n * C)) * C + i % C;
      if (line >= first && line < first + count) {
        ASSERT_EQ(out[i], whole_out[i]) << "value " << i;
      } else if (std::isnan(before[i])) {
        ASSERT_TRUE(std::isnan(out[i])) << "chunk from line " << first << " wrote value " << i << " of line " << line;
      }
    }
  }
  for (int64_t i = 0; i < values; ++i) EXPECT_EQ(out[i], whole_out[i]) << i;
}

// blocked_fft's partition: the chunks of every line count take each line once, in order, none
// empty and none longer than a chunk; the slots' ranges take each chunk once, as evenly as they
// can (an empty chunk would run a plan made for no lines; a chunk run twice wastes its time).
TEST(GeometryMemconvBodies, TheChunksAndTheSlotsCoverEveryLineOnce) {
  for (const int64_t chunk_lines : {int64_t{1}, int64_t{4}, body::kMaxChunkLines})
    for (int64_t lines = 1; lines <= 41; ++lines) {
      const int64_t chunks = body::chunk_count(lines, chunk_lines);
      int64_t next_line = 0;
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const auto [first, count] = body::line_chunk(chunk, lines, chunk_lines);
        ASSERT_EQ(first, next_line) << lines << " lines, chunk " << chunk;
        ASSERT_GE(count, 1) << lines << " lines, chunk " << chunk;
        ASSERT_LE(count, chunk_lines) << lines << " lines, chunk " << chunk;
        next_line = first + count;
      }
      ASSERT_EQ(next_line, lines) << lines << " lines in chunks of " << chunk_lines;
      for (int64_t slots = 1; slots <= 5; ++slots) {
        int64_t next_chunk = 0, shortest = chunks, longest = 0;
        for (int64_t slot = 0; slot < slots; ++slot) {
          int64_t taken = 0;
          body::for_slot_chunks(slot, slots, chunks, [&](int64_t chunk) {
            ASSERT_EQ(chunk, next_chunk) << chunks << " chunks, slot " << slot << " of " << slots;
            ++next_chunk;
            ++taken;
          });
          shortest = std::min(shortest, taken);
          longest = std::max(longest, taken);
        }
        ASSERT_EQ(next_chunk, chunks) << chunks << " chunks over " << slots << " slots";
        ASSERT_LE(longest - shortest, 1) << chunks << " chunks over " << slots << " slots";
      }
    }
}

// The declared arithmetic is the cheaper algorithm's: the direct form at the small size (N = 13),
// the FFT form from the default size on, so that an FFT row's roofline share is of work it does.
TEST(GeometryMemconvWork, TheDeclaredFlopsAreTheCheaperAlgorithms) {
  const auto workload = find_workload(conv::kWorkload);
  // small, B = 2, N = 13, C = 3: 6 lines x 13 x 14 + 3 x 78 (blend) + 32 x 13 (taps)
  EXPECT_DOUBLE_EQ(workload->work(SizeClass::Small).flops, 6 * 13 * 14 + 3 * 78 + 32 * 13);
  // default, 512 lines, L = 8192: per line two transforms of 2.5 L log2 L = 266,240 and 4,097 bins x 6,
  // the taps' transform once, the blend and the taps: 291,904,512 (the direct form: 8,598,454,272)
  const double transform = 2.5 * 8192 * 13;
  EXPECT_DOUBLE_EQ(workload->work(SizeClass::Default).flops,
                   512 * (2 * transform + 6 * 4097) + transform + 3 * 2097152.0 + 32 * 4096);
  EXPECT_LT(workload->work(SizeClass::Large).flops, 16.0 * 64 * 16384 * 16385 / 10);
}

// ---- host syncs: the original's forward (phase 0) has none; only the host_taps extra reads ------

TEST(GeometryMemconvSyncs, OnlyTheHostTapsExtraReadsTheWeights) {
  const auto out = testing::fresh_temp_path("geometry-memconv-syncs");
  const auto result = testing::run_phasebench("run --quick --reps 1 --size small --filter 'geometry/lior_memory_conv/' --out " +
                                              out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  int checked = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.status != Status::Ok || row.backend == kReferenceBackend) continue;
    EXPECT_EQ(row.host_syncs_per_iter, row.phase == conv::kHostTaps ? 1 : 0) << row.backend << "/" << row.phase;
    ++checked;
  }
  EXPECT_GE(checked, 5);  // torch 3, kokkos 3 (2 without FFTW), onednn 1
  fs::remove_all(out);
}

// ---- a variant with one wrong line is caught ----------------------------------------------------

enum class Bug { None, TapOneLagLate, LastSequenceUnwritten };

// reference<float> with one thing wrong, selected by `Bug`.
class BrokenMemoryConv final : public Variant {
 public:
  explicit BrokenMemoryConv(Bug bug) : bug_(bug) {}
  void setup(const ArrayMap& in) override {
    shape_ = in.at(conv::kInput).shape;
    x_ = in.at(conv::kInput).to_floats();
    p_ = in.at(conv::kKernelParams).to_floats();
    out_.assign(x_.size(), 0.f);
  }
  void poison_outputs() override { out_.assign(out_.size(), std::numeric_limits<float>::quiet_NaN()); }
  void run() override {
    const int64_t B = shape_[0], N = shape_[1], C = shape_[2];
    std::vector<float> k(static_cast<size_t>(N) + 1, 0.f);
    ref::taps<float>(p_.data(), N, k.data() + (bug_ == Bug::TapOneLagLate ? 1 : 0));  // the wrong line
    for (int64_t b = 0; b < B - (bug_ == Bug::LastSequenceUnwritten ? 1 : 0); ++b)
      for (int64_t t = 0; t < N; ++t)
        ref::direct_row(k.data(), x_.data() + b * N * C, t, C, p_[ref::kW0], out_.data() + (b * N + t) * C);
  }
  ArrayMap outputs() override { return {{conv::kOutput, HostArray::from_floats(shape_, out_.data(), int64_t(out_.size()))}}; }

 private:
  Bug bug_;
  std::vector<int64_t> shape_;
  std::vector<float> x_, p_, out_;
};

detail::LiveCase checked(Bug bug) {
  return testing::check_broken_variant(
      conv::kWorkload, [bug](const VariantContext&) { return std::make_unique<BrokenMemoryConv>(bug); },
      SizeClass::Small, 3);
}

TEST(GeometryMemconvCaught, TheUnbrokenControlPasses) { EXPECT_EQ(checked(Bug::None).status, Status::Ok); }

TEST(GeometryMemconvCaught, OneWrongLineIsCaughtAndTheOutputNamed) {
  const detail::LiveCase live = checked(Bug::TapOneLagLate);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find(conv::kOutput), std::string::npos) << live.reason;
  EXPECT_NE(live.reason.find("rel_l2_err"), std::string::npos) << live.reason;
}

TEST(GeometryMemconvCaught, AnUnwrittenSequenceIsCaughtByThePoison) {
  const detail::LiveCase live = checked(Bug::LastSequenceUnwritten);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("NaN"), std::string::npos) << live.reason;
}

}  // namespace
}  // namespace pb
