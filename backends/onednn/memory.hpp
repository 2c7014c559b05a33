#pragma once
// Memories of the oneDNN variants: plain descriptors, views without copies, host <-> engine
// copies for setup() and outputs(), and storage that can be renewed under bound primitives (how
// the variants model an eager framework, whose every op returns a new tensor).

#include <cstdint>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/onednn/onednn_backend.hpp"
#include "phasebench/arrays.hpp"

namespace pb::onednn_backend {

using Dims = dnnl::memory::dims;

/// A dense row-major fp32 array of `dims`.
dnnl::memory::desc dense(const Dims& dims);
/// An fp32 array of `dims` with explicit strides (in floats; 0 repeats along that axis).
dnnl::memory::desc strided(const Dims& dims, const Dims& strides);

/// A descriptor's dimensions and strides (plain layouts), in oneDNN 2.x and 3.x.
Dims dims_of(const dnnl::memory::desc& desc);
Dims strides_of(const dnnl::memory::desc& desc);

/// A view of `desc` (a plain, possibly strided layout) over `base`'s storage, starting `offset`
/// elements of desc's data type in: no copy, no allocation. Checked against the view's real span
/// (oneDNN's get_size() over-counts a strided view, e.g. rows that start part-way into a batch).
/// CPU engines only: there a memory handle is a host pointer.
dnnl::memory view(const dnnl::memory& base, const dnnl::memory::desc& desc, int64_t offset = 0);

/// Checks that items [first, first + count) lie in [0, total) (std::out_of_range naming `what`
/// otherwise) and returns first. For host addresses a variant computes and hands to primitives:
/// a write past the end from inside oneDNN (not instrumented) is seen by no sanitizer.
int64_t checked_first(int64_t first, int64_t count, int64_t total, const char* what);

/// A new memory of `desc` (fp32) holding `values` (setup).
dnnl::memory upload(const dnnl::memory::desc& desc, const std::vector<float>& values);
/// A new dense fp32 array of `dims` holding `array`'s values (setup).
dnnl::memory upload(const pb::HostArray& array, const Dims& dims);
/// A new dense fp32 array of `dims` with every element `value` (setup).
dnnl::memory filled(const Dims& dims, float value);
/// An fp32 engine array back on the host as a HostArray of `shape` (outputs(): not timed).
pb::HostArray download(const dnnl::memory& array, const std::vector<int64_t>& shape);

/// `user` reordered into a new memory of `desc` (the layout and type a primitive chose), in setup.
dnnl::memory converted(const dnnl::memory& user, const dnnl::memory::desc& desc);

/// An array whose storage renew() replaces. Primitives are bound to get() and to the views made
/// by view() once, in setup; renew() gives them all new storage (counted as allocated; the old
/// storage is freed), so code modelling an eager framework allocates on every write without
/// rebuilding a primitive. Views of it must come from its view(): a plain view would keep
/// pointing at the freed storage.
class RenewableMemory {
 public:
  explicit RenewableMemory(const dnnl::memory::desc& desc);
  /// Over `storage` allocated by the caller (a ping-pong buffer, say): never renewed.
  RenewableMemory(const dnnl::memory::desc& desc, const dnnl::memory& storage);

  const dnnl::memory& get() const { return handle_; }
  /// A view of `desc` starting `offset` elements in, kept pointing into the current storage.
  dnnl::memory view(const dnnl::memory::desc& desc, int64_t offset = 0);
  void renew();

 private:
  dnnl::memory::desc desc_;
  bool renewable_;
  dnnl::memory storage_;  // owns the current storage
  dnnl::memory handle_;   // what primitives are bound to
  std::vector<std::pair<dnnl::memory, size_t>> views_;  // with their offsets in bytes
};

/// An array to take views of: a RenewableMemory (views registered, so they follow its renewals)
/// or a plain memory.
class Viewable {
 public:
  Viewable(RenewableMemory& array) : renewable_(&array), array_(array.get()) {}  // NOLINT: implicit
  Viewable(const dnnl::memory& array) : array_(array) {}                         // NOLINT: implicit
  const dnnl::memory& get() const { return array_; }
  dnnl::memory view(const dnnl::memory::desc& desc, int64_t offset = 0) const {
    return renewable_ ? renewable_->view(desc, offset) : onednn_backend::view(array_, desc, offset);
  }

 private:
  RenewableMemory* renewable_ = nullptr;
  dnnl::memory array_;
};

}  // namespace pb::onednn_backend
