// energy_flow/aggregate on LibTorch, devices cpu and cuda. Math: reference/energy_flow/aggregate.hpp;
// catalog: suites/energy_flow/aggregate.cpp.
//
// baseline, as energy_lattice.py before seed 004: flow objects (host flags, a position and an
// energy tensor each) collected one by one; get_normalized_buffer_key reads each completed flow's
// position to the host (one host sync per flow); groups in a hash map; per group torch.stack of
// the energies, torch.tensor of distances and steps, softmax, weighted sum, written into out.
// legacy_xy_grouping: the same loops with the original's key, (x, y) alone (the bug, caught).
// mask_collection: completed = ~active & projected and the keys as tensor ops over all flows,
// one host read of the compacted keys to group them; per-group softmax as before.
// no_compaction (beyond the seed): segment_softmax without torch::nonzero, whose output size a GPU
// must send to the host before anything after it can be queued: every flow keeps its place, the
// ones not completed are routed to a spare cell B H W that is dropped at the end, and each cell's
// weighted sum is divided by its softmax sum once instead of every flow's weight.
// bf16_weights (approximate, the original's default since a commit after the seed): the softmax as
// torch.softmax computes a bf16 tensor, omega read as bf16, max, exp and sum in fp32, each weight
// rounded to bf16, the weighted sum in fp32; on no_compaction it needs each flow's weight, so each
// flow's e is divided by its cell's sum again.
// Keys: Tensor::round rounds half to even, as the original's torch.round (ref::lattice_index too).
// segment_softmax: no host read at all: scatter_reduce(amax) for each group's max, exp, an
// index_add for each group's sum (+ 1e-12), and one index_add of w E into out. On the CPU
// index_add_ adds in index order (deterministic, tests/energy_flow_test.cpp checks two runs are
// bitwise equal); on a GPU it adds with atomics in any order, a sum of a group's few positive
// weights reordered: well inside the 1e-5 tolerance (not measured here: no GPU).

#include <cmath>
#include <limits>
#include <unordered_map>

#include "backends/torch/torch_backend.hpp"
#include "suites/energy_flow/aggregate.hpp"

namespace pb::torch_backend {
namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace ef = pb::suites::energy_flow;
namespace ref = pb::reference::energy_flow;
using torch::indexing::Slice;

/// A flow object of the original: flags and step count as host attributes, tensors on the device.
struct FlowObject {
  bool active = false, projected = false;
  int64_t batch = 0, steps = 0;
  torch::Tensor position, energy;  // [3] and 0-d views into the stored tensors
};

/// The original's per-group aggregation, op by op: energies [n], distances [n], steps [n].
torch::Tensor softmax_weighted_energy(const torch::Tensor& energies, const torch::Tensor& distances,
                                      const torch::Tensor& steps) {
  const torch::Tensor proximity = 1.0 / (1.0 + distances);
  const torch::Tensor steps_factor = 1.0 + steps * ref::kStepsWeight;
  const torch::Tensor weights = torch::softmax(energies.abs() * proximity * steps_factor, 0);
  return (energies * weights).sum(0);
}

torch::Tensor distance_to_surface(const torch::Tensor& z) { return torch::min((z + 1).abs(), (z - 1).abs()); }

class AggregateTorch final : public Variant {
 public:
  explicit AggregateTorch(const VariantContext& context)
      : device_(context.device),
        legacy_(context.has(ef::kLegacyXyGrouping)),
        masks_(context.has(ef::kMaskCollection)),
        segment_softmax_(context.has(ef::kSegmentSoftmax)),
        no_compaction_(context.has(ef::kNoCompaction)),
        bf16_weights_(context.has(ef::kBf16Weights)) {}

  std::optional<CannotRun> support() const override { return cannot_run_on(device_); }

  void setup(const ArrayMap& inputs) override {
    const torch::Device device = device_for(device_);
    lattice_ = ef::lattice_of(inputs);
    const auto integers = [&](const std::string& name) { return to_tensor(require(inputs, name), device).to(torch::kLong); };
    batch_ = integers(ef::kBatch);
    steps_ = integers(ef::kSteps);
    active_ = integers(ef::kActive).to(torch::kBool);
    projected_ = integers(ef::kProjected).to(torch::kBool);
    position_ = to_tensor(require(inputs, ef::kPosition), device);
    energy_ = to_tensor(require(inputs, ef::kEnergy), device);
    out_ = torch::zeros({lattice_.batch, lattice_.plane()}, energy_.options());
    if (!masks_ && !segment_softmax_) make_flow_objects(inputs);
  }

  void poison_outputs() override { out_ = torch::full_like(out_, std::numeric_limits<float>::quiet_NaN()); }

  void run() override {
    if (no_compaction_) out_ = spare_cell_aggregate();
    else if (segment_softmax_) out_ = segment_softmax_aggregate();
    else if (masks_) out_ = masked_collection_aggregate();
    else out_ = loop_aggregate();
  }

  ArrayMap outputs() override { return {{ef::kAggregated, to_host_array(out_)}}; }

 private:
  void make_flow_objects(const ArrayMap& inputs) {
    const ref::Flows<float> host = ef::load_flows<float>(inputs);
    for (int64_t f = 0; f < host.count(); ++f)
      objects_.push_back({static_cast<bool>(host.active[f]), static_cast<bool>(host.projected[f]), host.batch[f],
                          host.steps[f], position_[f], energy_[f]});
  }

  /// Per-group softmax of the flows of each group, written into a fresh out [B, H W].
  template <typename Groups, typename Aggregate>
  torch::Tensor write_groups(const Groups& groups, Aggregate&& aggregate_group) const {
    torch::Tensor out = torch::zeros({lattice_.cells()}, energy_.options());
    for (const auto& [cell, group] : groups) out.index_put_({cell}, aggregate_group(group));
    return out.view({lattice_.batch, lattice_.plane()});
  }

  // baseline and legacy_xy_grouping: the loop version.
  torch::Tensor loop_aggregate() const {
    struct Member {
      const FlowObject* flow;
      float distance;
    };
    std::unordered_map<int64_t, std::vector<Member>> groups;
    std::vector<int64_t> order;  // keys in first-seen order, as a Python dict iterates
    for (const FlowObject& flow : objects_) {
      if (!ref::is_completed(flow.active, flow.projected)) continue;
      const torch::Tensor position = read_to_host(flow.position);  // get_normalized_buffer_key
      const float* p = position.data_ptr<float>();
      const int64_t s = ref::surface_cell(p[0], p[1], lattice_.width, lattice_.height);
      const int64_t key = legacy_ ? s : flow.batch * lattice_.plane() + s;
      auto [it, fresh] = groups.try_emplace(key);
      if (fresh) order.push_back(key);
      it->second.push_back({&flow, std::min(std::abs(p[2] + 1), std::abs(p[2] - 1))});
    }
    std::vector<std::pair<int64_t, std::vector<Member>>> by_cell;
    for (int64_t key : order) {  // legacy: the group goes to its first flow's batch
      const int64_t cell = legacy_ ? groups[key].front().flow->batch * lattice_.plane() + key : key;
      by_cell.emplace_back(cell, std::move(groups[key]));
    }
    const auto options = energy_.options();
    return write_groups(by_cell, [&](const std::vector<Member>& group) {
      std::vector<torch::Tensor> energies;
      std::vector<float> distances, steps;
      for (const Member& m : group) {
        energies.push_back(m.flow->energy);
        distances.push_back(m.distance);
        steps.push_back(static_cast<float>(m.flow->steps));
      }
      return softmax_weighted_energy(torch::stack(energies), torch::tensor(distances, options),
                                     torch::tensor(steps, options));
    });
  }

  /// The output cells b H W + s of flows at `position` [n, 3] in batches `batch` [n].
  torch::Tensor output_cells(const torch::Tensor& position, const torch::Tensor& batch) const {
    const auto index = [](const torch::Tensor& normalised, int extent) {
      return ((normalised + 1) * 0.5 * (extent - 1)).round().clamp(0, extent - 1).to(torch::kLong);
    };
    const torch::Tensor s = index(position.select(1, 1), lattice_.height) * lattice_.width +
                            index(position.select(1, 0), lattice_.width);
    return batch * lattice_.plane() + s;
  }

  /// The completed flows' indices and output cells, by masks over all flows.
  std::pair<torch::Tensor, torch::Tensor> completed_flows_and_cells() const {
    const torch::Tensor completed = torch::nonzero(active_.logical_not() & projected_).squeeze(1);
    return {completed, output_cells(position_.index_select(0, completed), batch_.index_select(0, completed))};
  }

  // mask_collection: vectorized collection, the grouping and per-group softmax as before.
  torch::Tensor masked_collection_aggregate() const {
    const auto [completed, cells] = completed_flows_and_cells();
    const torch::Tensor energy = energy_.index_select(0, completed);
    const torch::Tensor distance = distance_to_surface(position_.index_select(0, completed).select(1, 2));
    const torch::Tensor steps = steps_.index_select(0, completed).to(energy.scalar_type());
    const torch::Tensor host_cells = read_to_host(cells);
    const int64_t* cell = host_cells.data_ptr<int64_t>();
    std::unordered_map<int64_t, std::vector<int64_t>> groups;  // cell -> positions among the completed
    std::vector<int64_t> order;
    for (int64_t i = 0; i < host_cells.numel(); ++i) {
      auto [it, fresh] = groups.try_emplace(cell[i]);
      if (fresh) order.push_back(cell[i]);
      it->second.push_back(i);
    }
    std::vector<std::pair<int64_t, torch::Tensor>> by_cell;
    const auto index_options = torch::TensorOptions().dtype(torch::kLong).device(energy.device());
    for (int64_t key : order) by_cell.emplace_back(key, torch::tensor(groups[key], index_options));
    return write_groups(by_cell, [&](const torch::Tensor& members) {
      return softmax_weighted_energy(energy.index_select(0, members), distance.index_select(0, members),
                                     steps.index_select(0, members));
    });
  }

  // segment_softmax: one scatter-based segment softmax and one index_add, no host read.
  torch::Tensor segment_softmax_aggregate() const {
    const auto [completed, cells] = completed_flows_and_cells();
    const torch::Tensor energy = energy_.index_select(0, completed);
    const torch::Tensor distance = distance_to_surface(position_.index_select(0, completed).select(1, 2));
    const torch::Tensor steps = steps_.index_select(0, completed).to(energy.scalar_type());
    const torch::Tensor omega =
        in_weight_precision(energy.abs() * (1.0 / (1.0 + distance)) * (1.0 + steps * ref::kStepsWeight));
    const torch::Tensor zeros = torch::zeros({lattice_.cells()}, energy.options());
    const torch::Tensor group_max = zeros.scatter_reduce(0, cells, omega, "amax", /*include_self=*/false);
    const torch::Tensor e = (omega - group_max.index_select(0, cells)).exp();
    const torch::Tensor group_sum = zeros.index_add(0, cells, e);
    const torch::Tensor weights = in_weight_precision(e / (group_sum.index_select(0, cells) + ref::kSoftmaxSumEpsilon));
    return zeros.index_add(0, cells, weights * energy).view({lattice_.batch, lattice_.plane()});
  }

  // no_compaction: every flow in place, those not completed into the spare cell B H W.
  torch::Tensor spare_cell_aggregate() const {
    const torch::Tensor completed = active_.logical_not() & projected_;
    const torch::Tensor cells = torch::where(completed, output_cells(position_, batch_), torch::full_like(batch_, lattice_.cells()));
    const torch::Tensor omega = in_weight_precision(energy_.abs() * (1.0 / (1.0 + distance_to_surface(position_.select(1, 2)))) *
                                                   (1.0 + steps_.to(energy_.scalar_type()) * ref::kStepsWeight));
    const torch::Tensor zeros = torch::zeros({lattice_.cells() + 1}, energy_.options());
    const torch::Tensor group_max = zeros.scatter_reduce(0, cells, omega, "amax", /*include_self=*/false);
    const torch::Tensor e = (omega - group_max.index_select(0, cells)).exp();
    const torch::Tensor group_sum = zeros.index_add(0, cells, e);
    torch::Tensor out;
    if (bf16_weights_) {  // each flow's weight, rounded
      const torch::Tensor weights = in_weight_precision(e / (group_sum.index_select(0, cells) + ref::kSoftmaxSumEpsilon));
      out = zeros.index_add(0, cells, weights * energy_);
    } else {
      out = zeros.index_add(0, cells, e * energy_) / (group_sum + ref::kSoftmaxSumEpsilon);
    }
    return out.slice(0, 0, lattice_.cells()).view({lattice_.batch, lattice_.plane()});
  }

  /// `values` as the softmax reads or writes them: rounded to bf16 (and widened back) with
  /// bf16_weights, unchanged otherwise.
  torch::Tensor in_weight_precision(const torch::Tensor& values) const {
    return bf16_weights_ ? values.to(torch::kBFloat16).to(values.scalar_type()) : values;
  }

  std::string device_;
  bool legacy_, masks_, segment_softmax_, no_compaction_, bf16_weights_;
  ref::Lattice lattice_;
  torch::Tensor batch_, steps_, active_, projected_, position_, energy_, out_;
  std::vector<FlowObject> objects_;
};

const VariantRegistration registration{
    ef::kWorkload, "torch", {ef::kBaseline, ef::kMaskCollection, ef::kSegmentSoftmax, ef::kNoCompaction, ef::kLegacyXyGrouping,
                                  ef::kBf16Weights},
    [](const VariantContext& context) { return std::make_unique<AggregateTorch>(context); }};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
}  // namespace pb::torch_backend
