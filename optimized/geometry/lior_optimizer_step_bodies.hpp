#pragma once
// geometry/lior_optimizer_step: the host pieces of Kokkos' streaming_update phase (beyond the seed),
// kept apart from the kernel so that tests/geometry_optimizer_step_test.cpp runs them on the host:
// the cut of the flat values into spans (each in one tensor), the part of each span written with
// stores that bypass the caches (placed and checked in setup), and the update of one span.
//
// Why streaming stores: the update reads p and g and writes out, 12 B per value, over 226 MB at
// the default size, far above any cache. An ordinary store first reads the output's cache line
// (write-allocate), so the pass moves 16 B per value; a non-temporal store writes the line without
// reading it. On a 2-core EPYC guest the same 2-read-1-write pass over 18.9M values ran 1.3-1.7x
// faster with them (ci/microbench, interleaved repetitions).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "optimized/common/streamed_stores.hpp"  // PB_GEOMETRY_STREAMING_STORES, store_destination

namespace pb::optimized::geometry::lior_optimizer_step {

/// Values [begin, end) of the flat buffer, all in tensor `tensor`; [streamed_begin, streamed_end)
/// the part written 4 values at a time with non-temporal stores (place_streamed_parts).
struct UpdateSpan {
  int64_t begin = 0, end = 0;
  int tensor = 0;
  int64_t streamed_begin = 0, streamed_end = 0;
};

/// The flat range [0, offsets.back()) cut at every tensor boundary (offsets, P + 1 entries from 0)
/// and at every multiple of span_values: each value in one span, in order, none empty. A thread
/// that takes a contiguous run of spans then streams contiguous memory, and a span boundary inside
/// a tensor falls on a multiple of span_values (64-byte aligned when span_values is a multiple of
/// 16 and the buffer is).
inline std::vector<UpdateSpan> update_spans(const std::vector<int64_t>& offsets, int64_t span_values) {
  std::vector<UpdateSpan> spans;
  for (size_t j = 0; j + 1 < offsets.size(); ++j) {
    for (int64_t begin = offsets[j]; begin < offsets[j + 1];) {
      const int64_t next_cut = (begin / span_values + 1) * span_values;
      const int64_t end = std::min(offsets[j + 1], next_cut);
      spans.push_back({begin, end, static_cast<int>(j), begin, begin});
      begin = end;
    }
  }
  return spans;
}

/// Each span's streamed part for the output buffer `out`: from the span's first value whose
/// address is 16-byte aligned (a non-temporal store of 4 floats needs it), whole vectors of 4 up
/// to the span's end.
inline void place_streamed_parts(std::vector<UpdateSpan>& spans, const float* out) {
  for (UpdateSpan& span : spans) {
    int64_t first = span.begin;
    while (first < span.end && reinterpret_cast<uintptr_t>(out + first) % 16 != 0) ++first;
    span.streamed_begin = first;
    span.streamed_end = first + (span.end - first) / 4 * 4;
  }
}

/// What is wrong with a span's streamed part for `out`, empty when nothing is: it must lie in the
/// span, start on a 16-byte boundary (unless it is empty), hold whole vectors and leave fewer than
/// 4 values on either side. Checked in setup: a misaligned non-temporal store faults inside the
/// kernel, where no error can be reported, and a streamed part cut short is a slower pass that
/// verify cannot see.
inline std::string streamed_part_error(const UpdateSpan& span, const float* out) {
  const int64_t head = span.streamed_begin - span.begin, tail = span.end - span.streamed_end;
  if (head < 0 || tail < 0 || span.streamed_end < span.streamed_begin) return "outside its span";
  const bool empty = span.streamed_end == span.streamed_begin;  // a short span may have none
  if (!empty && reinterpret_cast<uintptr_t>(out + span.streamed_begin) % 16 != 0) return "not 16-byte aligned";
  if ((span.streamed_end - span.streamed_begin) % 4 != 0) return "not whole vectors of 4";
  if (head >= 4 || tail >= 4) return "4 or more values left to ordinary stores";
  return {};
}

/// out[i] = p[i] - scale g[i] over the span: its streamed part 4 values at a time with
/// non-temporal stores, the values before and after it with ordinary stores, then a store fence,
/// so that the streamed values are visible to whoever reads out after the kernel. The arithmetic
/// is the other phases' (a multiply, then a subtract; no FMA): the same floats. Without SSE,
/// ordinary stores throughout (the phase then reports UNSUPPORTED).
inline void streamed_update(const float* p, const float* g, float* out, const UpdateSpan& span, float scale) {
  const auto ordinary = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) out[i] = p[i] - scale * g[i];
  };
#ifdef PB_GEOMETRY_STREAMING_STORES
  // Each part from its own bounds, so that the vector loop always starts where setup checked it.
  ordinary(span.begin, span.streamed_begin);
  const __m128 scales = _mm_set1_ps(scale);
  for (int64_t i = span.streamed_begin; i < span.streamed_end; i += 4)
    _mm_stream_ps(streaming::store_destination(out + i), _mm_sub_ps(_mm_loadu_ps(p + i), _mm_mul_ps(scales, _mm_loadu_ps(g + i))));
  ordinary(span.streamed_end, span.end);
  _mm_sfence();
#else
  ordinary(span.begin, span.end);
#endif
}

}  // namespace pb::optimized::geometry::lior_optimizer_step
