#pragma once
// Per-iteration counters: host syncs, dispatched operations, bytes allocated; operations per named
// region; memory held after each step.
//
// Backends feed them from their runtime hooks (RecordFunction, Kokkos Tools, their own
// primitive/launch wrappers) and from their host-read helpers. A host sync is counted wherever
// the code makes the host wait for or read a device value, even when the device is the CPU: the
// count is a property of the code, not of the machine. Counting is only active inside a
// CountingScope, which the harness opens around one untimed iteration.
//
// Regions: a variant marks the code of one function of the original with
//     pb::counters::Region region("anxiety");
// and every operation counted while it is open is also credited to it (to the innermost open
// region when they nest; operations outside every region only to the total). Outside a counting
// scope a Region costs one branch. Steps: a variant whose iteration is several steps calls
// begin_steps() once it has let go of the previous iteration's state, then end_step() after each
// step; the bytes held then (allocated minus released since begin_steps()) are recorded per step.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pb::counters {

struct Totals {
  int64_t host_syncs = 0;
  int64_t ops = 0;
  int64_t bytes_allocated = 0;
  // Operations per named region, in the order the regions were first opened.
  std::vector<std::pair<std::string, int64_t>> ops_by_region;
  // Bytes held after each step (end_step()), relative to begin_steps(); empty when not marked.
  std::vector<int64_t> step_memory_bytes;
};

bool active();
void note_host_sync(int64_t count = 1);
void note_ops(int64_t count = 1);
void note_allocation(int64_t bytes);
/// Memory given back (a free the allocator reports): lowers the bytes held, not bytes_allocated.
void note_release(int64_t bytes);

/// Marks the start of an iteration's steps: the bytes held are measured from here.
void begin_steps();
/// Records the bytes held now (since begin_steps()) as the next step's figure.
void end_step();

/// An open named region (see above). `name` must outlive the counting scope: a string literal.
class Region {
 public:
  explicit Region(const char* name);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  bool entered_ = false;
};

/// Zeroes the counters and activates counting until finish() or destruction.
class CountingScope {
 public:
  CountingScope();
  ~CountingScope();
  CountingScope(const CountingScope&) = delete;
  CountingScope& operator=(const CountingScope&) = delete;
  Totals finish();  // stops counting, returns what was counted

 private:
  bool finished_ = false;
};

}  // namespace pb::counters
