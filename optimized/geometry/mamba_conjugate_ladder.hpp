#pragma once
// geometry/mamba_conjugate on an executor: the kernel bodies and the ladder, written once against
// the executor interface of backends/cuda/device_executor.cuh, so that the same code runs as CUDA
// kernels (mamba_conjugate-cuda.cu), as Kokkos kernels (mamba_conjugate-kokkos.cpp) and on the
// host in tests/geometry_metric_test.cpp. Per state tensor x (r, then i), every run:
//
//   baseline:     c = fresh [B,L,8], copy x into it; t = fresh [B,L,7], t = -c[..., 1:] (one
//                 launch); c[..., 1:] = t (one launch): the original's clone and assignment
//   inplace_neg:  c = fresh, copy x into it; c[..., 1:] negated in place (one launch)  (the seed)
//   single_pass:  c = fresh; c = conj(x) in one launch, nothing copied first
// No host read in run().
// Kernel names are at most 15 characters: KokkosExecutor builds a std::string from each, which
// then needs no heap allocation (counted as bytes allocated inside run()).

#include <cstdint>
#include <vector>

#include "backends/cuda/host_device.hpp"
#include "phasebench/arrays.hpp"
#include "optimized/geometry/metric_executor.hpp"
#include "phasebench/phases.hpp"
#include "suites/geometry/mamba_conjugate.hpp"

namespace pb::geometry_kernels {

namespace mc = pb::suites::geometry::mamba_conjugate;
constexpr int64_t kComponents = mc::ref::kStateComponents, kTail = kComponents - 1;

/// Position of tail element k (components 1..7 of each 8-vector, in order) in the [.., 8] array.
PB_HOST_DEVICE inline int64_t tail_position(int64_t k) { return k / kTail * kComponents + 1 + k % kTail; }

/// t[k] = -c[tail k]: the temporary that `-c[..., 1:]` allocates.
struct NegatedTail {
  const float* c;
  float* t;
  PB_HOST_DEVICE void operator()(int64_t k) const { t[k] = -c[tail_position(k)]; }
};

/// c[tail k] = t[k]: the assignment back into the slice.
struct AssignTail {
  const float* t;
  float* c;
  PB_HOST_DEVICE void operator()(int64_t k) const { c[tail_position(k)] = t[k]; }
};

/// c[tail k] = -c[tail k]: neg_() of the slice.
struct NegateTailInPlace {
  float* c;
  PB_HOST_DEVICE void operator()(int64_t k) const { c[tail_position(k)] = -c[tail_position(k)]; }
};

/// out = conj(x) in one pass (the reference's own element function).
struct Conjugate {
  const float* x;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t index) const { out[index] = mc::ref::conjugate_element(x, index); }
};

template <typename Exec>
class MambaConjugateLadder {
 public:
  MambaConjugateLadder(Exec& exec, const ArrayMap& in, const PhasePlan& plan)
      : exec_(exec),
        in_place_(plan.has(mc::kInPlaceNeg)),
        single_pass_(plan.has(mc::kSinglePass)),
        shape_(require(in, mc::kStateReal).shape),
        values_(require(in, mc::kStateReal).numel()),
        r_(upload_array(exec, require(in, mc::kStateReal))),
        i_(upload_array(exec, require(in, mc::kStateImag))) {}

  void run() {
    r_conj_ = conjugate(r_);
    i_conj_ = conjugate(i_);
  }

  void poison_outputs() {
    poison_buffers(exec_, {&r_conj_, &i_conj_}, values_);
  }

  ArrayMap outputs() { return {{mc::kConjReal, download_array(exec_, r_conj_, shape_)}, {mc::kConjImag, download_array(exec_, i_conj_, shape_)}}; }

 private:
  using Buffer = typename Exec::template Buffer<float>;

  Buffer conjugate(const Buffer& x) {
    Buffer c = exec_.template allocate<float>(values_);
    const int64_t tail = values_ / kComponents * kTail;
    if (single_pass_) {
      exec_.for_each("mc.conjugate", values_, Conjugate{x.data(), c.data()});
      return c;
    }
    exec_.copy(c.data(), x.data(), values_);  // clone
    if (in_place_) {
      exec_.for_each("mc.neg_", tail, NegateTailInPlace{c.data()});
      return c;
    }
    Buffer t = exec_.template allocate<float>(tail);
    exec_.for_each("mc.neg", tail, NegatedTail{c.data(), t.data()});
    exec_.for_each("mc.assign", tail, AssignTail{t.data(), c.data()});
    return c;
  }



  Exec& exec_;
  bool in_place_, single_pass_;
  std::vector<int64_t> shape_;
  int64_t values_;
  Buffer r_, i_, r_conj_, i_conj_;
};

}  // namespace pb::geometry_kernels
