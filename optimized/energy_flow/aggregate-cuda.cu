// energy_flow/aggregate on CUDA: kernel launches on the default stream, the ladder of
// aggregate-kokkos.cpp. Math: reference/energy_flow/aggregate.hpp. Per-flow and per-cell bodies:
// aggregate_bodies.hpp (run on the host by tests/energy_flow_test.cpp).
// baseline: host flags; each completed flow's x and y read back with blocking copies (two host
// syncs per flow); groups in a hash map; per group its flow list uploaded and one one-thread
// kernel. mask_collection: one kernel writes every flow's cell (-1: not completed), read back once
// and grouped on the host in flow order; per group as before. segment_softmax: CSR groups with
// integer atomics for the counts and slots, cub's exclusive scan for the offsets, each segment
// sorted by flow index and reduced by its own thread: no host read, no floating-point atomics, the
// same bits on every run. bf16_weights (approximate): segment_softmax with the bodies'
// WeightPrecision::Bf16 (omega and each weight rounded to bf16). Without a usable device support() reports SKIPPED. Compiled by nvcc
// here, never run on a device.

#include <cub/device/device_scan.cuh>

#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/energy_flow/aggregate_bodies.hpp"
#include "phasebench/variant.hpp"
#include "suites/energy_flow/aggregate.hpp"

namespace pb::cuda_backend {
namespace {

namespace ef = pb::suites::energy_flow;
namespace ref = ef::ref;
namespace body = pb::optimized::energy_flow;

__device__ int64_t global_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

__global__ void cells_kernel(body::FlowPointers flows, int64_t n, int width, int height, int64_t* cell_of) {
  const int64_t i = global_index();
  if (i < n) cell_of[i] = body::completed_cell_body(i, flows, width, height);
}
__global__ void count_kernel(const int64_t* cell_of, int64_t n, unsigned long long* counts) {
  const int64_t i = global_index();
  if (i < n && cell_of[i] >= 0) atomicAdd(&counts[cell_of[i]], 1ull);
}
__global__ void slot_kernel(const int64_t* cell_of, int64_t n, const unsigned long long* offsets,
                            unsigned long long* cursor, int64_t* members) {
  const int64_t i = global_index();
  if (i >= n || cell_of[i] < 0) return;
  const int64_t cell = cell_of[i];
  members[offsets[cell] + atomicAdd(&cursor[cell], 1ull)] = i;
}
__global__ void segment_softmax_kernel(body::FlowPointers flows, const unsigned long long* offsets, int64_t cells,
                                       int64_t* members, body::WeightPrecision weights, float* out) {
  const int64_t c = global_index();
  if (c >= cells) return;
  int64_t* segment = members + offsets[c];
  const auto count = static_cast<int64_t>(offsets[c + 1] - offsets[c]);
  body::sort_segment_body(segment, count);
  out[c] = body::segment_softmax_body(segment, count, flows, weights);
}
__global__ void group_kernel(body::FlowPointers flows, const int64_t* members, int64_t count, int64_t cell, float* out) {
  if (global_index() == 0) out[cell] = body::segment_softmax_body(members, count, flows);
}

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& values) {
  DeviceBuffer<T> buffer(values.size());
  copy_to_device(buffer.data(), values.data(), buffer.bytes());
  return buffer;
}

class AggregateCuda final : public Variant {
 public:
  explicit AggregateCuda(const VariantContext& context)
      : context_(context), masks_(context.has(ef::kMaskCollection)), segment_softmax_(context.has(ef::kSegmentSoftmax)),
        weights_(context.has(ef::kBf16Weights) ? body::WeightPrecision::Bf16 : body::WeightPrecision::Fp32) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    lattice_ = ef::lattice_of(inputs);
    host_ = ef::load_flows<float>(inputs);
    batch_ = upload(host_.batch);
    steps_ = upload(host_.steps);
    x_ = upload(host_.x);
    y_ = upload(host_.y);
    z_ = upload(host_.z);
    energy_ = upload(host_.energy);
    active_ = upload(host_.active);
    projected_ = upload(host_.projected);
    out_ = DeviceBuffer<float>(lattice_.cells());
    cell_of_host_.assign(host_.count(), 0);
  }

  void poison_outputs() override { fill_with_nan(out_.data(), out_.bytes()); }

  void run() override {
    zero_on(nullptr, out_.data(), out_.bytes());  // empty cells stay 0
    if (segment_softmax_) segment_softmax_aggregate();
    else write_groups(masks_ ? masked_groups() : looped_groups());
  }

  ArrayMap outputs() override {
    std::vector<float> host(out_.size());
    download_on(nullptr, host.data(), out_.data(), out_.bytes());
    return {{ef::kAggregated, ef::aggregated_output(lattice_, host.data())}};
  }

 private:
  using Groups = std::vector<std::pair<int64_t, std::vector<int64_t>>>;  // cell, flows in order

  body::FlowPointers pointers() const {
    return {batch_.data(), steps_.data(), x_.data(), y_.data(), z_.data(), energy_.data(), active_.data(), projected_.data()};
  }

  static void add(Groups& groups, std::unordered_map<int64_t, size_t>& where, int64_t cell, int64_t flow) {
    auto [it, fresh] = where.try_emplace(cell, groups.size());
    if (fresh) groups.push_back({cell, {}});
    groups[it->second].second.push_back(flow);
  }

  Groups looped_groups() {
    Groups groups;
    std::unordered_map<int64_t, size_t> where;
    for (int64_t f = 0; f < host_.count(); ++f) {
      if (!ref::is_completed(host_.active[f], host_.projected[f])) continue;
      float x = 0, y = 0;
      read_to_host(&x, x_.data() + f, sizeof x);
      read_to_host(&y, y_.data() + f, sizeof y);
      add(groups, where, host_.batch[f] * lattice_.plane() + ref::surface_cell(x, y, lattice_.width, lattice_.height), f);
    }
    return groups;
  }

  Groups masked_groups() {
    const int64_t n = host_.count();
    DeviceBuffer<int64_t> cell_of(n);
    launch(cells_kernel, one_thread_per_row(n), "cells_kernel", pointers(), n, lattice_.width, lattice_.height,
           cell_of.data());
    read_to_host(cell_of_host_.data(), cell_of.data(), cell_of.bytes());
    Groups groups;
    std::unordered_map<int64_t, size_t> where;
    for (int64_t f = 0; f < n; ++f)
      if (cell_of_host_[f] >= 0) add(groups, where, cell_of_host_[f], f);
    return groups;
  }

  void write_groups(const Groups& groups) {
    for (const auto& [cell, group] : groups) {
      const DeviceBuffer<int64_t> members = upload(group);  // the stack; its free waits for the kernel
      launch(group_kernel, one_thread_per_row(1), "group_kernel", pointers(), members.data(),
             static_cast<int64_t>(group.size()), cell, out_.data());
    }
  }

  void segment_softmax_aggregate() {
    const int64_t n = host_.count(), cells = lattice_.cells();
    DeviceBuffer<int64_t> cell_of(n), members(n);
    DeviceBuffer<unsigned long long> counts(cells + 1), offsets(cells + 1), cursor(cells);
    zero_on(nullptr, counts.data(), counts.bytes());
    zero_on(nullptr, cursor.data(), cursor.bytes());
    launch(cells_kernel, one_thread_per_row(n), "cells_kernel", pointers(), n, lattice_.width, lattice_.height,
           cell_of.data());
    launch(count_kernel, one_thread_per_row(n), "count_kernel", cell_of.data(), n, counts.data());
    std::size_t scratch_bytes = 0;
    check(cub::DeviceScan::ExclusiveSum(nullptr, scratch_bytes, counts.data(), offsets.data(), cells + 1), "scan size");
    DeviceBuffer<unsigned char> scratch(scratch_bytes);
    check(cub::DeviceScan::ExclusiveSum(scratch.data(), scratch_bytes, counts.data(), offsets.data(), cells + 1),
          "cub::DeviceScan::ExclusiveSum");
    launch(slot_kernel, one_thread_per_row(n), "slot_kernel", cell_of.data(), n, offsets.data(), cursor.data(),
           members.data());
    launch(segment_softmax_kernel, one_thread_per_row(cells), "segment_softmax_kernel", pointers(), offsets.data(),
           cells, members.data(), weights_, out_.data());
  }

  VariantContext context_;
  bool masks_, segment_softmax_;
  body::WeightPrecision weights_;  // bf16_weights: Bf16
  ref::Lattice lattice_;
  ref::Flows<float> host_;
  DeviceBuffer<int64_t> batch_, steps_;
  DeviceBuffer<float> x_, y_, z_, energy_, out_;
  DeviceBuffer<uint8_t> active_, projected_;
  std::vector<int64_t> cell_of_host_;
};

const VariantRegistration registration{
    ef::kWorkload, "cuda", {ef::kBaseline, ef::kMaskCollection, ef::kSegmentSoftmax, ef::kBf16Weights},
    [](const VariantContext& context) { return std::make_unique<AggregateCuda>(context); }};

}  // namespace
}  // namespace pb::cuda_backend
