#pragma once
// Per-iteration counters: host syncs, dispatched operations, bytes allocated.
//
// Backends feed them from their runtime hooks (RecordFunction, Kokkos Tools, their own
// primitive/launch wrappers) and from their host-read helpers. A host sync is counted wherever
// the code makes the host wait for or read a device value, even when the device is the CPU: the
// count is a property of the code, not of the machine. Counting is only active inside a
// CountingScope, which the harness opens around one untimed iteration.

#include <cstdint>

namespace pb::counters {

struct Totals {
  int64_t host_syncs = 0;
  int64_t ops = 0;
  int64_t bytes_allocated = 0;
};

bool active();
void note_host_sync(int64_t count = 1);
void note_ops(int64_t count = 1);
void note_allocation(int64_t bytes);

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
