// energy_flow/aggregate on Kokkos (default execution space). Math: reference/energy_flow/aggregate.hpp;
// per-flow and per-cell bodies: aggregate-bodies.hpp; catalog: suites/energy_flow/aggregate.cpp.
//
// baseline (and legacy_xy_grouping, the same loops with the original's (x, y) key): flow objects
// with host flags; each completed flow's x and y read to the host (two counted host syncs per
// flow: they are two Views); groups in a hash map; per group its flow list copied to the device (the stack) and one
// kernel doing its softmax and weighted sum.
// mask_collection: one parallel_scan compacts the completed flows and computes their cells; their
// count, cells and flow indices read to the host (three syncs) to group them; per group as before.
// segment_softmax: no host read. The groups as CSR (aggregate-bodies.hpp): cell counts by integer
// atomics, offsets by a scan, slots by an integer atomic cursor, each segment then sorted by flow
// index, and one kernel over the cells, each reducing its own segment in flow order. Race-free
// under any parallel execution space, and deterministic: integer atomics give the same counts
// whatever their order, and the sort undoes the order the slots were taken in.
// bf16_weights (approximate): segment_softmax with the weights in bf16 (WeightPrecision::Bf16 of
// the bodies: omega and each weight rounded to bf16, Kokkos 3.4 having no bf16 type).

#include <limits>
#include <unordered_map>

#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/energy_flow/aggregate-bodies.hpp"
#include "phasebench/variant.hpp"
#include "suites/energy_flow/aggregate.hpp"

namespace pb::kokkos_backend {
namespace {

namespace ef = pb::suites::energy_flow;
namespace ref = ef::ref;
namespace body = pb::optimized::energy_flow;

using Floats = DeviceView<float*>;
using Indices = DeviceView<int64_t*>;
using Flags = DeviceView<uint8_t*>;

const std::string kGroupLabel = "energy_flow/group_softmax";
const std::string kCompactLabel = "energy_flow/compact_completed";

/// Groups in first-seen order, as a Python dict iterates: output cell -> flow indices.
struct Groups {
  std::unordered_map<int64_t, std::vector<int64_t>> members;
  std::vector<int64_t> order;
  void add(int64_t cell, int64_t flow) {
    auto [it, fresh] = members.try_emplace(cell);
    if (fresh) order.push_back(cell);
    it->second.push_back(flow);
  }
};

class AggregateKokkos final : public Variant {
 public:
  explicit AggregateKokkos(const VariantContext& context)
      : legacy_(context.has(ef::kLegacyXyGrouping)),
        masks_(context.has(ef::kMaskCollection)),
        segment_softmax_(context.has(ef::kSegmentSoftmax)),
        weights_(context.has(ef::kBf16Weights) ? body::WeightPrecision::Bf16 : body::WeightPrecision::Fp32) {}

  void setup(const ArrayMap& inputs) override {
    lattice_ = ef::lattice_of(inputs);
    host_ = ef::load_flows<float>(inputs);
    const int64_t n = host_.count();
    const auto copy = [&](const std::string& label, const auto& values) {
      using View = DeviceView<typename std::decay_t<decltype(values)>::value_type*>;
      return filled_on_device<View>(label, [&](int64_t i) { return values[i]; }, n);
    };
    batch_ = copy("flow.batch", host_.batch);
    steps_ = copy("flow.steps", host_.steps);
    x_ = copy("flow.x", host_.x);
    y_ = copy("flow.y", host_.y);
    z_ = copy("flow.z", host_.z);
    energy_ = copy("flow.energy", host_.energy);
    active_ = copy("flow.active", host_.active);
    projected_ = copy("flow.projected", host_.projected);
    out_ = uninitialized<Floats>("aggregated_energy", lattice_.cells());
    position_host_ = Kokkos::View<float[2], Kokkos::HostSpace>("position_host");
  }

  void poison_outputs() override { fill_nan(out_); }

  void run() override {
    out_ = Floats("aggregated_energy", lattice_.cells());  // zeros: empty cells stay 0
    if (segment_softmax_) segment_softmax_aggregate();
    else {
      Groups groups = masks_ ? masked_groups() : looped_groups();
      write_groups(groups);
    }
  }

  ArrayMap outputs() override {
    const std::vector<float> out = to_host_vector(out_);
    return {{ef::kAggregated, ef::aggregated_output(lattice_, out.data())}};
  }

 private:
  body::FlowPointers pointers() const {
    return {batch_.data(), steps_.data(), x_.data(), y_.data(), z_.data(), energy_.data(), active_.data(), projected_.data()};
  }

  // baseline and legacy_xy_grouping: the flow objects' flags are host attributes; the key needs
  // the position, which lives on the device: one host read per completed flow.
  Groups looped_groups() {
    Groups groups;
    for (int64_t f = 0; f < host_.count(); ++f) {
      if (!ref::is_completed(host_.active[f], host_.projected[f])) continue;
      copy_to_host(Kokkos::subview(position_host_, 0), Kokkos::subview(x_, f));  // x and y are two
      copy_to_host(Kokkos::subview(position_host_, 1), Kokkos::subview(y_, f));  // views: two reads
      const int64_t s = ref::surface_cell(position_host_(0), position_host_(1), lattice_.width, lattice_.height);
      groups.add(legacy_ ? s : host_.batch[f] * lattice_.plane() + s, f);
    }
    if (!legacy_) return groups;
    Groups by_first_batch;  // the bug: each (x, y) group goes to its first flow's batch
    for (int64_t s : groups.order)
      for (int64_t f : groups.members[s]) by_first_batch.add(host_.batch[groups.members[s].front()] * lattice_.plane() + s, f);
    return by_first_batch;
  }

  // mask_collection: one scan compacts the completed flows with their cells; one host read.
  Groups masked_groups() {
    const int64_t n = host_.count();
    const Indices cells = uninitialized<Indices>("completed.cells", n), flows = uninitialized<Indices>("completed.flows", n);
    const body::FlowPointers p = pointers();
    const int width = lattice_.width, height = lattice_.height;
    int64_t completed = 0;
    Kokkos::parallel_scan(
        kCompactLabel, RangePolicy(0, n),
        KOKKOS_LAMBDA(int64_t i, int64_t& slot, bool final) {
          const int64_t cell = body::completed_cell_body(i, p, width, height);
          if (cell < 0) return;
          if (final) {
            cells(slot) = cell;
            flows(slot) = i;
          }
          ++slot;
        },
        completed);
    counters::note_host_sync();  // the scan's total reaches the host
    const std::pair<int64_t, int64_t> found(0, completed);
    const auto host_cells = read_to_host(Kokkos::subview(cells, found));
    const auto host_flows = read_to_host(Kokkos::subview(flows, found));
    Groups groups;
    for (int64_t i = 0; i < completed; ++i) groups.add(host_cells(i), host_flows(i));
    return groups;
  }

  /// Per group: its flow list copied to the device, one kernel for its softmax and weighted sum.
  void write_groups(Groups& groups) {
    const body::FlowPointers p = pointers();
    const Floats out = out_;
    for (int64_t cell : groups.order) {
      const std::vector<int64_t>& group = groups.members[cell];
      const int64_t count = static_cast<int64_t>(group.size());
      const Indices members = filled_on_device<Indices>("group", [&](int64_t i) { return group[i]; }, count);
      Kokkos::parallel_for(
          kGroupLabel, RangePolicy(0, 1),
          KOKKOS_LAMBDA(int64_t) { out(cell) = body::segment_softmax_body(members.data(), count, p); });
    }
  }

  void segment_softmax_aggregate() {
    const int64_t n = host_.count(), cells = lattice_.cells();
    const body::FlowPointers p = pointers();
    const int width = lattice_.width, height = lattice_.height;
    const Indices cell_of("flow.cell", n), counts("cell.count", cells), offsets("cell.offset", cells + 1),
        cursor("cell.cursor", cells), members("cell.members", n);
    Kokkos::parallel_for(
        "energy_flow/cells", RangePolicy(0, n), KOKKOS_LAMBDA(int64_t i) {
          const int64_t cell = body::completed_cell_body(i, p, width, height);
          cell_of(i) = cell;
          if (cell >= 0) Kokkos::atomic_increment(&counts(cell));
        });
    Kokkos::parallel_scan(
        "energy_flow/offsets", RangePolicy(0, cells), KOKKOS_LAMBDA(int64_t c, int64_t& running, bool final) {
          if (final) offsets(c) = running;
          running += counts(c);
          if (final && c == cells - 1) offsets(cells) = running;
        });
    Kokkos::parallel_for(
        "energy_flow/slots", RangePolicy(0, n), KOKKOS_LAMBDA(int64_t i) {
          const int64_t cell = cell_of(i);
          if (cell >= 0) members(offsets(cell) + Kokkos::atomic_fetch_add(&cursor(cell), int64_t{1})) = i;
        });
    const Floats out = out_;
    const body::WeightPrecision weights = weights_;
    Kokkos::parallel_for(
        "energy_flow/segment_softmax", RangePolicy(0, cells), KOKKOS_LAMBDA(int64_t c) {
          int64_t* segment = members.data() + offsets(c);
          const int64_t count = offsets(c + 1) - offsets(c);
          body::sort_segment_body(segment, count);
          out(c) = body::segment_softmax_body(segment, count, p, weights);
        });
  }

  bool legacy_, masks_, segment_softmax_;
  body::WeightPrecision weights_;  // bf16_weights: Bf16
  ref::Lattice lattice_;
  ref::Flows<float> host_;  // the flow objects' host attributes (flags, batch) for the loop version
  Indices batch_, steps_;
  Floats x_, y_, z_, energy_, out_;
  Flags active_, projected_;
  Kokkos::View<float[2], Kokkos::HostSpace> position_host_;
};

const VariantRegistration registration{
    ef::kWorkload, "kokkos", {ef::kBaseline, ef::kMaskCollection, ef::kSegmentSoftmax, ef::kLegacyXyGrouping, ef::kBf16Weights},
    [](const VariantContext& context) { return std::make_unique<AggregateKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
