#pragma once
// The environment phasebench gives the worker processes that check and time the variants, unless
// the user chose otherwise: both settings change what a timing measures on a shared or virtual
// machine, so machine.json records them and who set them. Each is read by a library once, when
// the process starts: the supervisors (`run`, `verify`) set them before they exec a worker.
//
// How OpenMP's idle threads wait, bounded. libgomp's threads spin 300,000 times at a barrier
// before they sleep: on a machine whose cores are all busy, a 2-thread row's threads then spin for
// a partner that holds no core, and an iteration takes a thousand times as long. A bounded spin
// count makes them sleep after tens of microseconds instead, which removes that collapse; a count
// too low slows rows that wait briefly on an idle machine, so the bound is high enough to keep
// idle rows as fast as with libgomp's default (docs/regression-gate.md, "Threads that wait").
// Kokkos' OpenMP back end, oneDNN and LibTorch here all use libgomp, so one setting covers them.
//
// Freed memory kept for reuse. glibc serves every block above its mmap threshold (at most 32 MiB)
// with a mapping of its own and unmaps it when freed, so the next step's allocation of the same
// size faults every page in again, zeroed by the kernel. The seeds' phase-0 code allocates its
// tensors anew every step (trainer2's candidate batch, many times a window); in a virtual machine,
// where page faults are expensive, the rows then measure the machine's page faults more than the
// code, and checking takes many times as long. PyTorch's caching allocator does the same on a GPU
// (the seeds' setting), jemalloc and tcmalloc on a CPU. glibc.malloc.mmap_max=0 serves every
// block from the heap; trim_threshold keeps freed heap memory instead of returning it. A user who
// wants glibc's own behaviour sets any glibc.malloc tunable or MALLOC_*_ variable
// (GLIBC_TUNABLES=glibc.malloc.mmap_max=65536 is glibc's default).

#include <nlohmann/json.hpp>

namespace pb::worker_environment {

/// The spin count phasebench sets when the user set neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY.
inline constexpr const char* kBoundedSpinCount = "10000";

/// The glibc tunables phasebench adds to GLIBC_TUNABLES when the user set no malloc tunable.
inline constexpr const char* kKeepFreedMemory =
    "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184";

/// Sets GOMP_SPINCOUNT in this process's environment, for the workers it will start, unless the
/// user chose how threads wait (GOMP_SPINCOUNT or OMP_WAIT_POLICY set, even empty) -- which is how
/// the default is overridden: GOMP_SPINCOUNT=300000 is libgomp's own.
void bound_spinning_for_workers();

/// Adds kKeepFreedMemory to GLIBC_TUNABLES (after the user's own tunables, if any) for the workers
/// it will start, unless the user chose how malloc behaves: a glibc.malloc tunable in
/// GLIBC_TUNABLES or a MALLOC_*_ variable (MALLOC_ARENA_MAX, MALLOC_MMAP_MAX_, ...) set.
void keep_freed_memory_for_workers();

/// Both of the above: what a supervisor calls before it starts its first worker.
void prepare_for_workers();

/// The variables of machine.json's `environment` that phasebench set itself, not the user: a
/// list of names (empty when none), as the worker sees them.
nlohmann::json set_by_phasebench();

}  // namespace pb::worker_environment
