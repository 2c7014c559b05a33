// Counter storage, and the C++ heap hook that counts bytes the variant allocates with new
// (std::vector and friends). Runtimes that allocate through their own allocators (torch tensors,
// Kokkos views, oneDNN memories, cudaMalloc) report through their backend's hooks instead.

#include "phasebench/counters.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace pb::counters {
namespace {

std::atomic<bool> counting{false};
std::atomic<int64_t> host_syncs{0};
std::atomic<int64_t> ops{0};
std::atomic<int64_t> bytes_allocated{0};

}  // namespace

bool active() { return counting.load(std::memory_order_relaxed); }

void note_host_sync(int64_t count) {
  if (active()) host_syncs.fetch_add(count, std::memory_order_relaxed);
}

void note_ops(int64_t count) {
  if (active()) ops.fetch_add(count, std::memory_order_relaxed);
}

void note_allocation(int64_t bytes) {
  if (active()) bytes_allocated.fetch_add(bytes, std::memory_order_relaxed);
}

CountingScope::CountingScope() {
  host_syncs = 0;
  ops = 0;
  bytes_allocated = 0;
  counting = true;
}

CountingScope::~CountingScope() { counting = false; }

Totals CountingScope::finish() {
  counting = false;
  finished_ = true;
  return {host_syncs.load(), ops.load(), bytes_allocated.load()};
}

}  // namespace pb::counters

// ---- global operator new: counts heap bytes while a CountingScope is open ------------------------

namespace {

void* allocate_counted(std::size_t size) {
  pb::counters::note_allocation(static_cast<int64_t>(size));
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}

void* allocate_counted_aligned(std::size_t size, std::align_val_t alignment) {
  pb::counters::note_allocation(static_cast<int64_t>(size));
  const std::size_t align = static_cast<std::size_t>(alignment);
  const std::size_t rounded = (size + align - 1) / align * align;
  if (void* memory = std::aligned_alloc(align, rounded == 0 ? align : rounded)) return memory;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return allocate_counted(size); }
void* operator new[](std::size_t size) { return allocate_counted(size); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate_counted_aligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return allocate_counted_aligned(size, alignment);
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
