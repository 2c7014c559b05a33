// Counter storage, and the C++ heap hook that counts bytes the variant allocates with new
// (std::vector and friends). Runtimes that allocate through their own allocators (torch tensors,
// Kokkos views, oneDNN memories, cudaMalloc) report through their backend's hooks instead.

#include "phasebench/counters.hpp"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace pb::counters {
namespace {

std::atomic<bool> counting{false};
std::atomic<int64_t> host_syncs{0};
std::atomic<int64_t> ops{0};
std::atomic<int64_t> bytes_allocated{0};
std::atomic<int64_t> bytes_held{0};  // allocated minus released while counting

// Regions and steps live in fixed tables: the hooks run inside the allocator hooks, so counting
// must not allocate. Regions are opened by the thread running the variant; a hook called on
// another thread sees no open region there and credits only the total.
constexpr int kMaxRegions = 32, kMaxDepth = 16, kMaxSteps = 256;
struct RegionSlot {
  const char* name = nullptr;
  std::atomic<int64_t> ops{0};
};
RegionSlot regions[kMaxRegions];
int region_count = 0;
thread_local int open_regions[kMaxDepth];
thread_local int depth = 0;

int64_t steps_base = 0;
int64_t step_bytes[kMaxSteps];
int step_count = 0;

int region_slot(const char* name) {
  for (int i = 0; i < region_count; ++i)
    if (regions[i].name == name || std::strcmp(regions[i].name, name) == 0) return i;
  if (region_count == kMaxRegions) return -1;
  regions[region_count].name = name;
  regions[region_count].ops = 0;
  return region_count++;
}

}  // namespace

bool active() { return counting.load(std::memory_order_relaxed); }

void note_host_sync(int64_t count) {
  if (active()) host_syncs.fetch_add(count, std::memory_order_relaxed);
}

void note_ops(int64_t count) {
  if (!active()) return;
  ops.fetch_add(count, std::memory_order_relaxed);
  if (depth > 0) regions[open_regions[depth - 1]].ops.fetch_add(count, std::memory_order_relaxed);
}

void note_allocation(int64_t bytes) {
  if (!active()) return;
  bytes_allocated.fetch_add(bytes, std::memory_order_relaxed);
  bytes_held.fetch_add(bytes, std::memory_order_relaxed);
}

void note_release(int64_t bytes) {
  if (active()) bytes_held.fetch_sub(bytes, std::memory_order_relaxed);
}

void begin_steps() {
  if (!active()) return;
  steps_base = bytes_held.load();
  step_count = 0;
}

void end_step() {
  if (active() && step_count < kMaxSteps) step_bytes[step_count++] = bytes_held.load() - steps_base;
}

Region::Region(const char* name) {
  if (!active() || depth == kMaxDepth) return;
  const int slot = region_slot(name);
  if (slot < 0) return;  // more distinct regions than the table holds: credited to the enclosing one
  open_regions[depth++] = slot;
  entered_ = true;
}

Region::~Region() {
  if (entered_ && depth > 0) --depth;
}

CountingScope::CountingScope() {
  host_syncs = 0;
  ops = 0;
  bytes_allocated = 0;
  bytes_held = 0;
  region_count = 0;
  step_count = 0;
  steps_base = 0;
  counting = true;
}

CountingScope::~CountingScope() { counting = false; }

Totals CountingScope::finish() {
  counting = false;
  finished_ = true;
  Totals totals{host_syncs.load(), ops.load(), bytes_allocated.load(), {}, {}};
  for (int i = 0; i < region_count; ++i) totals.ops_by_region.emplace_back(regions[i].name, regions[i].ops.load());
  totals.step_memory_bytes.assign(step_bytes, step_bytes + step_count);
  return totals;
}

}  // namespace pb::counters

// ---- global operator new: counts heap bytes while a CountingScope is open ------------------------

namespace {

// bytes_allocated counts the bytes asked for; the bytes held count each block's usable size, the
// one figure known again when an unsized delete frees it. Null (allocation failed) is not counted.
void* noted(void* memory, std::size_t size) noexcept {
  if (memory && pb::counters::active()) {
    pb::counters::note_allocation(static_cast<int64_t>(size));
    pb::counters::note_release(static_cast<int64_t>(size) - static_cast<int64_t>(malloc_usable_size(memory)));
  }
  return memory;
}

void* allocate_noted(std::size_t size) noexcept { return noted(std::malloc(size == 0 ? 1 : size), size); }

void* allocate_noted_aligned(std::size_t size, std::align_val_t alignment) noexcept {
  const std::size_t align = static_cast<std::size_t>(alignment);
  const std::size_t rounded = (size + align - 1) / align * align;
  return noted(std::aligned_alloc(align, rounded == 0 ? align : rounded), size);
}

void* or_bad_alloc(void* memory) {
  if (!memory) throw std::bad_alloc();
  return memory;
}

void release_counted(void* memory) noexcept {
  if (memory && pb::counters::active()) pb::counters::note_release(static_cast<int64_t>(malloc_usable_size(memory)));
  std::free(memory);
}

}  // namespace

// Every form is replaced, the nothrow ones too: a form left out is served by the runtime's own
// operator new (AddressSanitizer's, under the sanitizer build) and freed here with free(), which
// ASan reports as alloc-dealloc-mismatch (std::stable_sort's nothrow temporary buffer did), and
// its bytes would go uncounted.
void* operator new(std::size_t size) { return or_bad_alloc(allocate_noted(size)); }
void* operator new[](std::size_t size) { return or_bad_alloc(allocate_noted(size)); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return or_bad_alloc(allocate_noted_aligned(size, alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return or_bad_alloc(allocate_noted_aligned(size, alignment));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate_noted(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate_noted(size); }
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return allocate_noted_aligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return allocate_noted_aligned(size, alignment);
}
void operator delete(void* memory) noexcept { release_counted(memory); }
void operator delete[](void* memory) noexcept { release_counted(memory); }
void operator delete(void* memory, std::size_t) noexcept { release_counted(memory); }
void operator delete[](void* memory, std::size_t) noexcept { release_counted(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { release_counted(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { release_counted(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { release_counted(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { release_counted(memory); }
void operator delete(void* memory, const std::nothrow_t&) noexcept { release_counted(memory); }
void operator delete[](void* memory, const std::nothrow_t&) noexcept { release_counted(memory); }
void operator delete(void* memory, std::align_val_t, const std::nothrow_t&) noexcept { release_counted(memory); }
void operator delete[](void* memory, std::align_val_t, const std::nothrow_t&) noexcept { release_counted(memory); }
