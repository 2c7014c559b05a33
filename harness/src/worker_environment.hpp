#pragma once
// How OpenMP's idle threads wait, bounded by default (issue 29). libgomp's threads spin 300,000
// times at a barrier before they sleep: on a machine whose cores are all busy, a 2-thread row's
// threads then spin for a partner that holds no core, and a 0.025 ms iteration took 24 ms. With
// GOMP_SPINCOUNT=1000 they sleep after about 50 us instead: measured on this project's 2-core
// machine, the idle times of trainer2/lior_step's threaded rows stayed within their noise and the
// collapse under load shrank from 950x to 11x (docs/regression-gate.md, "Threads that wait").
// 1000 made a few LibTorch rows 25% slower on an idle machine (waits longer than ~50 us); 10000
// kept every row of the small suite within -19%..+5% of libgomp's default idle (median -7%) and
// still removed the collapse (23.7 ms -> 0.40 ms for that iteration).
// Kokkos' OpenMP back end, oneDNN and LibTorch here all use libgomp, so one setting covers them.
// libgomp reads it once, when it is loaded: it is set for the worker processes, before their exec.

#include <nlohmann/json.hpp>

namespace pb::openmp_waiting {

/// The spin count phasebench sets when the user set neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY.
inline constexpr const char* kBoundedSpinCount = "10000";

/// Sets GOMP_SPINCOUNT in this process's environment, for the workers it will start, unless the
/// user chose how threads wait (GOMP_SPINCOUNT or OMP_WAIT_POLICY set, even empty) -- which is how
/// the default is overridden: GOMP_SPINCOUNT=300000 is libgomp's own.
void bound_spinning_for_workers();

/// The variables of machine.json's `environment` that phasebench set itself, not the user: a
/// list of names (empty when none), as the worker sees them.
nlohmann::json set_by_phasebench();

}  // namespace pb::openmp_waiting
