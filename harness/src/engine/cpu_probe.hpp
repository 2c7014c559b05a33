#pragma once
// How fast the CPUs are right now, measured just before each timed repetition. On a shared host a
// virtual CPU's physical core is shared with other tenants' threads, and the guest cannot see
// them: /proc/stat counts no steal, yet library-heavy scalar code on that CPU runs up to half
// again as long, for seconds to minutes, then recovers. A two-thread row waits for its slower CPU,
// a one-thread row is as fast as the CPU it landed on, and two runs of one build differ by what
// their CPUs were doing. The probe makes that visible: one pinned thread per CPU the process may
// run on, all started together, each timing the same piece of work (tanh and erf of floats, the
// kind of code that slows most); the slowest CPU's time is the repetition's `cpu_probe_us`.
// Internal to the harness.

namespace pb::cpu_probe {

/// The slowest CPU's time for the probe's work, in microseconds: each CPU's best of two passes,
/// run on all of them at once. NaN where the probe cannot run (no affinity mask, no threads).
/// The first call starts the probe's threads; they sleep between calls and end with the process.
double slowest_cpu_us();

}  // namespace pb::cpu_probe
