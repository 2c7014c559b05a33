// energy_flow/aggregate on Kokkos (default execution space). Math: reference/energy_flow/aggregate.hpp;
// per-flow and per-cell bodies: aggregate_bodies.hpp; catalog: suites/energy_flow/aggregate.cpp.
//
// baseline (and legacy_xy_grouping, the same loops with the original's (x, y) key): flow objects
// with host flags; each completed flow's x and y read to the host (two counted host syncs per
// flow: they are two Views); groups in a hash map; per group its flow list copied to the device (the stack) and one
// kernel doing its softmax and weighted sum.
// mask_collection: one parallel_scan compacts the completed flows and computes their cells; their
// count, cells and flow indices read to the host (three syncs) to group them; per group as before.
// segment_softmax: no host read. The groups as CSR (aggregate_bodies.hpp): cell counts by integer
// atomics, offsets by a scan, slots by an integer atomic cursor, each segment then sorted by flow
// index, and one kernel over the cells, each reducing its own segment in flow order. Race-free
// under any parallel execution space, and deterministic: integer atomics give the same counts
// whatever their order, and the sort undoes the order the slots were taken in.
// bf16_weights (approximate): segment_softmax with the weights in bf16 (WeightPrecision::Bf16 of
// the bodies: omega and each weight rounded to bf16, Kokkos 3.4 having no bf16 type).
// owned_cells (beyond the seed, exact, fp32 weights again): no groups. The cells are split into
// one contiguous block per thread (its owner); the completed flows are partitioned by owner in
// two passes over the flows, each thread taking one slice of them (count per owner, then copy each
// flow's cell, omega and energy to its owner's part, in flow order); then each owner computes its
// block: the max per cell, exp(omega - max) and the sums, one division per cell. No atomics, no
// sort, no allocation per iteration, and deterministic (the partition keeps flow order). A
// host-space design: one owner per thread of `concurrency()`, owners^2 counters; with a GPU's
// tens of thousands of threads that table alone would not fit (the CUDA ladder stops at
// segment_softmax). docs/energy_flow.md has the versions tried and what each measured.
// vectorized_flows (beyond the seed, exact, host cores only): no partition. Each thread takes a
// slice of the flows and keeps its own copy of the cells: four kernels of one work item per
// thread (aggregate_simd_bodies.hpp): keys, omegas and each cell's max in 16 SIMD lanes; the
// copies' maxima merged per block of cells; exp(omega - max) in lanes and the per-cell sums; the
// copies' sums added and divided per block of cells. Deterministic for a given thread count.

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/energy_flow/aggregate_bodies.hpp"
#include "optimized/energy_flow/aggregate_simd_bodies.hpp"
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

/// owned_cells: the cell of flows [begin, end), -1 for those not completed.
KOKKOS_INLINE_FUNCTION void cells_of_slice(const body::FlowPointers& p, int width, int height, int64_t begin,
                                           int64_t end, int64_t* cell_of) {
  PB_IVDEP  // cell_of is a View of its own
  for (int64_t i = begin; i < end; ++i) cell_of[i] = body::completed_cell_body(i, p, width, height);
}

// Also compiled for AVX2 and AVX-512 where the host allows it (host_vectorization.hpp). The loop
// stays scalar in every clone (the tie's branch, the int64 batch arithmetic), but there floor is
// one instruction rather than SSE2's emulation.
#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void cells_of_slice_cloned(
    const body::FlowPointers& p, int width, int height, int64_t begin, int64_t end, int64_t* cell_of) {
  cells_of_slice(p, width, height, begin, end, cell_of);
}
#define PB_ENERGY_FLOW_CELLS_OF_SLICE cells_of_slice_cloned
#else
#define PB_ENERGY_FLOW_CELLS_OF_SLICE cells_of_slice
#endif

#ifdef PB_KOKKOS_KERNELS_ON_HOST
namespace simd = body::simd;

// vectorized_flows' four passes, each compiled once per ISA (the loader picks the clone); what
// a work item reads and writes is the header's (keys_and_maxima_of and the others, tested there).
PB_HOST_ISA_CLONES void keys_and_maxima_cloned(const body::FlowPointers& p, const simd::Layout& layout,
                                               int64_t slice, int32_t* keys, float* omegas, float* largest) {
  simd::keys_and_maxima_of(p, layout, slice, keys, omegas, largest);
}
PB_HOST_ISA_CLONES void merge_maxima_cloned(const simd::Layout& layout, const body::CellBlocks& blocks,
                                            int64_t owner, float* largest, float* sums) {
  simd::merge_maxima_of(layout, blocks, owner, largest, sums);
}
PB_HOST_ISA_CLONES void sums_cloned(const body::FlowPointers& p, const simd::Layout& layout, int64_t slice,
                                    const int32_t* keys, const float* omegas, const float* largest, float* sums) {
  simd::sums_of(p, layout, slice, keys, omegas, largest, sums);
}
PB_HOST_ISA_CLONES void outputs_cloned(const simd::Layout& layout, const body::CellBlocks& blocks,
                                       int64_t owner, const float* sums, float* out) {
  simd::outputs_of(layout, blocks, owner, sums, out);
}
#endif  // PB_KOKKOS_KERNELS_ON_HOST

class AggregateKokkos final : public Variant {
 public:
  explicit AggregateKokkos(const VariantContext& context)
      : legacy_(context.has(ef::kLegacyXyGrouping)),
        masks_(context.has(ef::kMaskCollection)),
        segment_softmax_(context.has(ef::kSegmentSoftmax)),
        owned_cells_(context.has(ef::kOwnedCells)),
        vectorized_(context.has(ef::kVectorizedFlows)),
        weights_(context.has(ef::kBf16Weights) ? body::WeightPrecision::Bf16 : body::WeightPrecision::Fp32) {}

  std::optional<CannotRun> support() const override {
    return vectorized_ ? host_cores_only(ef::kVectorizedFlows) : std::nullopt;
  }

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
    if (vectorized_) return setup_vectorized(n);
    if (owned_cells_) {  // the scratch of every iteration, allocated once
      const int64_t owners = std::min<int64_t>(lattice_.cells(), ExecSpace::concurrency());
      blocks_ = body::cell_blocks(lattice_.cells(), owners);
      cell_of_ = uninitialized<Indices>("flow.cell", n);
      owned_flows_ = uninitialized<DeviceView<body::OwnedFlow*>>("owned.flows", n);
      slice_counts_ = uninitialized<SliceCounts>("owned.counts", owners, owners + kCacheLineCounters);
      cursors_ = uninitialized<SliceCounts>("owned.cursors", owners, owners + kCacheLineCounters);
      largest_ = uninitialized<Floats>("cell.max", lattice_.cells());
      total_ = uninitialized<Floats>("cell.sum", lattice_.cells());
      weighted_ = uninitialized<Floats>("cell.weighted", lattice_.cells());
    }
  }

  // owned_cells' scratch too. The cell of each flow: a slice left uncomputed would otherwise keep
  // the previous run's cells (or the earlier phase's, which the allocator handed back) and pass.
  // The partition's records: one the partition leaves unwritten, or one read past an owner's part
  // (the slots after the completed flows are never written), names the cell one past the last,
  // which a sanitizer build reports and the normal build turns into a wrong or NaN output rather
  // than a jump through garbage.
  void poison_outputs() override {
    fill_nan(out_);
    if (vectorized_) return poison_vectorized();
    if (!owned_cells_) return;
    Kokkos::deep_copy(cell_of_, int64_t{-1});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Kokkos::deep_copy(owned_flows_, body::OwnedFlow{static_cast<int32_t>(lattice_.cells()), nan, nan});
  }

  void run() override {
    if (vectorized_) return vectorized_aggregate();  // writes every cell
    if (owned_cells_) return owned_cells_aggregate();  // writes every cell
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

  // owned_cells: thread t's slice of the flows is [n t / T, n (t + 1) / T) for T owners; its
  // completed flows of owner o are counted in counts(t, o) and copied, in flow order, to owner o's
  // part of owned_flows, after every earlier owner's flows and after earlier slices' of its own.
  // A slice's counters and cursors are a row of their own, padded by a cache line: two threads
  // incrementing counters in one line would pass it back and forth on every flow.
  void owned_cells_aggregate() {
    const int64_t n = host_.count(), owners = blocks_.owners;
    const body::CellBlocks blocks = blocks_;
    const body::FlowPointers p = pointers();
    const int width = lattice_.width, height = lattice_.height;
    const Indices cell_of = cell_of_;
    const SliceCounts counts = slice_counts_, cursors = cursors_;
    const DeviceView<body::OwnedFlow*> owned = owned_flows_;
    Kokkos::parallel_for(
        "energy_flow/count_by_owner", RangePolicy(0, owners), KOKKOS_LAMBDA(int64_t slice) {
          PB_ENERGY_FLOW_CELLS_OF_SLICE(p, width, height, n * slice / owners, n * (slice + 1) / owners, cell_of.data());
          for (int64_t o = 0; o < owners; ++o) counts(slice, o) = 0;
          for (int64_t i = n * slice / owners; i < n * (slice + 1) / owners; ++i)
            if (cell_of(i) >= 0) ++counts(slice, blocks.owner_of(cell_of(i)));
        });
    Kokkos::parallel_for(
        "energy_flow/partition_by_owner", RangePolicy(0, owners), KOKKOS_LAMBDA(int64_t slice) {
          for (int64_t o = 0; o < owners; ++o) {
            cursors(slice, o) = first_owned_flow(counts, o);
            for (int64_t t = 0; t < slice; ++t) cursors(slice, o) += counts(t, o);
          }
          for (int64_t i = n * slice / owners; i < n * (slice + 1) / owners; ++i) {
            const int64_t cell = cell_of(i);
            if (cell < 0) continue;
            owned(cursors(slice, blocks.owner_of(cell))++) =
                body::OwnedFlow{static_cast<int32_t>(cell), body::omega_body(i, p), p.energy[i]};
          }
        });
    const Floats largest = largest_, total = total_, weighted = weighted_, out = out_;
    Kokkos::parallel_for(
        "energy_flow/owned_cells", RangePolicy(0, owners), KOKKOS_LAMBDA(int64_t owner) {
          const int64_t begin = first_owned_flow(counts, owner), end = first_owned_flow(counts, owner + 1);
          body::owned_block_body(owned.data() + begin, end - begin, blocks.first(owner), blocks.first(owner + 1),
                                 largest.data(), total.data(), weighted.data(), out.data());
        });
  }

  // vectorized_flows: one copy of the cells per thread (a slice of the flows each, and a block of
  // the cells each for the merges); the keys and omegas of whole blocks of 16 flows.
  void setup_vectorized(int64_t n) {
    const int64_t copies = ExecSpace::concurrency();  // a slice with no blocks only resets its copy
    if (lattice_.cells() >= std::numeric_limits<int32_t>::max())
      throw std::invalid_argument("vectorized_flows keys cells in int32: " + std::to_string(lattice_.cells()) + " cells");
    layout_ = body::simd::make_layout(lattice_.width, lattice_.height, lattice_.batch, n, copies);
    blocks_ = body::cell_blocks(lattice_.cells(), copies);
    keys_ = uninitialized<DeviceView<int32_t*>>("flow.key", layout_.blocks() * body::simd::kLanes);
    omegas_ = uninitialized<Floats>("flow.omega", layout_.blocks() * body::simd::kLanes);
    largest_ = uninitialized<Floats>("copies.max", copies * layout_.copy_stride);
    total_ = uninitialized<Floats>("copies.sums", copies * 2 * layout_.copy_stride);
  }

  // Every scratch value a pass reads is written earlier in the same run: NaN keys' omegas and
  // copies would show in the output if one were not (keys of -1 would be read out of bounds,
  // which the sanitizer build reports).
  void poison_vectorized() {
    Kokkos::deep_copy(keys_, int32_t{-1});
    fill_nan(omegas_);
    fill_nan(largest_);
    fill_nan(total_);
  }

  void vectorized_aggregate() {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    const body::FlowPointers p = pointers();
    const simd::Layout layout = layout_;
    const body::CellBlocks blocks = blocks_;
    int32_t* keys = keys_.data();
    float *omegas = omegas_.data(), *largest = largest_.data(), *sums = total_.data(), *out = out_.data();
    const RangePolicy threads(0, layout.copies);
    Kokkos::parallel_for("energy_flow/keys_and_maxima", threads, [=](int64_t slice) {
      keys_and_maxima_cloned(p, layout, slice, keys, omegas, largest);
    });
    Kokkos::parallel_for("energy_flow/merge_maxima", threads,
                         [=](int64_t owner) { merge_maxima_cloned(layout, blocks, owner, largest, sums); });
    Kokkos::parallel_for("energy_flow/sums", threads,
                         [=](int64_t slice) { sums_cloned(p, layout, slice, keys, omegas, largest, sums); });
    Kokkos::parallel_for("energy_flow/outputs", threads,
                         [=](int64_t owner) { outputs_cloned(layout, blocks, owner, sums, out); });
#endif
  }

  /// counts(t, o): slice t's completed flows of owner o; each row padded past a cache line.
  using SliceCounts = DeviceView<int64_t**>;
  static constexpr int64_t kCacheLineCounters = 64 / sizeof(int64_t);

  /// Where owner o's flows start in owned_flows: the completed flows of every owner before it.
  KOKKOS_INLINE_FUNCTION static int64_t first_owned_flow(const SliceCounts& counts, int64_t owner) {
    int64_t before = 0;
    for (int64_t t = 0; t < static_cast<int64_t>(counts.extent(0)); ++t)
      for (int64_t o = 0; o < owner; ++o) before += counts(t, o);
    return before;
  }

  bool legacy_, masks_, segment_softmax_, owned_cells_, vectorized_;
  body::WeightPrecision weights_;  // bf16_weights: Bf16
  ref::Lattice lattice_;
  ref::Flows<float> host_;  // the flow objects' host attributes (flags, batch) for the loop version
  Indices batch_, steps_;
  // owned_cells' scratch: its blocks of cells, each flow's cell, the partition and the per-cell sums.
  body::CellBlocks blocks_;
  Indices cell_of_;
  SliceCounts slice_counts_, cursors_;
  DeviceView<body::OwnedFlow*> owned_flows_;
  Floats largest_, total_, weighted_;  // vectorized_flows: the copies' maxima and sums (largest_, total_)
  body::simd::Layout layout_;
  DeviceView<int32_t*> keys_;
  Floats omegas_;
  Floats x_, y_, z_, energy_, out_;
  Flags active_, projected_;
  Kokkos::View<float[2], Kokkos::HostSpace> position_host_;
};

const VariantRegistration registration{
    ef::kWorkload, "kokkos", {ef::kBaseline, ef::kMaskCollection, ef::kSegmentSoftmax, ef::kLegacyXyGrouping, ef::kBf16Weights,
                       ef::kOwnedCells, ef::kVectorizedFlows},
    [](const VariantContext& context) { return std::make_unique<AggregateKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
