#include "engine/interference.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>

#include "common/number_text.hpp"

namespace pb::interference {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ticks_per_second() {
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return ticks > 0 ? ticks : 100;
}

// /proc/stat's first line: "cpu  user nice system idle iowait irq softirq steal guest guest_nice".
// Guest time is already inside user and nice; idle and iowait are not busy.
bool read_machine_times(double& busy_s, double& steal_s) {
  std::ifstream in("/proc/stat");
  std::string label;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || label != "cpu") return false;
  in >> steal;  // absent on old kernels: 0
  busy_s = (user + nice + system + irq + softirq + steal) / ticks_per_second();
  steal_s = steal / ticks_per_second();
  return true;
}

// utime and stime (fields 14 and 15) of /proc/self/stat, at the same clock as /proc/stat. The
// command name (field 2) may hold spaces: the fields are counted after its closing parenthesis.
bool read_own_times(double& own_s) {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  double utime = 0, stime = 0;
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index == 14) utime = std::atof(field.c_str());
    if (index == 15) stime = std::atof(field.c_str());
  }
  if (!fields) return false;
  own_s = (utime + stime) / ticks_per_second();
  return true;
}

double seconds(const timeval& time) { return static_cast<double>(time.tv_sec) + time.tv_usec / 1e6; }

}  // namespace

CpuClock read_cpu_clock() {
  CpuClock clock;
  clock.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage children{};
  getrusage(RUSAGE_CHILDREN, &children);
  clock.children_s = seconds(children.ru_utime) + seconds(children.ru_stime);
  clock.readable = read_machine_times(clock.machine_busy_s, clock.steal_s) && read_own_times(clock.own_s);
  return clock;
}

OtherWork other_work_between(const CpuClock& before, const CpuClock& after) {
  OtherWork work;
  work.seconds = after.wall_s - before.wall_s;
  if (!before.readable || !after.readable || work.seconds <= 0) {
    work.cores = work.estimate_cores = work.steal_cores = kNaN;
    return work;
  }
  const double mine = (after.own_s - before.own_s) + (after.children_s - before.children_s);
  const double others = (after.machine_busy_s - before.machine_busy_s) - mine;
  work.estimate_cores = others / work.seconds;
  work.cores = std::max(0.0, work.estimate_cores);
  work.steal_cores = std::max(0.0, after.steal_s - before.steal_s) / work.seconds;
  return work;
}

double counter_tick_seconds() { return 1 / ticks_per_second(); }

nlohmann::json load_average() {
  std::ifstream in("/proc/loadavg");
  double one = kNaN, five = kNaN, fifteen = kNaN;
  if (!(in >> one >> five >> fifteen)) return nullptr;
  return {{"1min", one}, {"5min", five}, {"15min", fifteen}};
}

namespace {

std::string threads_in_words(int threads) {
  return std::to_string(std::max(1, threads)) + (threads > 1 ? " threads" : " thread");
}

// "other work used 1.4 cores of 2 while it ran on 2 threads"; empty without contention. The mean
// is other work's CPU time over the repetitions' time. Each repetition's reading is off by up to
// a tick per CPU either way (the machine's counter ticks, this process's does not; their
// differences do not telescope: the repetitions are not back to back), so n of them are off by
// about (cores + 1) ticks x sqrt(n) at most in all: contention must exceed that too. A short
// row (5 ms repetitions) thus never shows contention it cannot resolve on its own. Where its
// readings decide neither way (their mean is within that resolution of the threshold, or there
// are none), the timing stage's mean stands in for them.
std::string contention(const RowRepetitions& reps, int threads, int cores, double timing_stage_cores) {
  if (cores <= 0) return {};
  double others_s = 0, measured_s = 0;
  int measured = 0;
  for (size_t i = 0; i < reps.others_cores.size() && i < reps.rep_ms.size(); ++i) {
    const double others = reps.others_cores[i], seconds = reps.rep_ms[i] / 1e3;
    if (std::isnan(others) || std::isnan(seconds) || seconds <= 0) continue;
    others_s += others * seconds;
    measured_s += seconds;
    ++measured;
  }
  const double spare = std::max(0, cores - std::max(1, threads));
  const std::string of_cores = " cores of " + std::to_string(cores) + " while it ran on " + threads_in_words(threads);
  const double resolution = measured == 0 ? std::numeric_limits<double>::infinity()
                                          : (cores + 1) * counter_tick_seconds() * std::sqrt(double(measured)) / measured_s;
  const double beyond_spare = measured == 0 ? 0 : others_s / measured_s - spare;
  if (beyond_spare >= kContentionCores + resolution)
    return "other work used " + format_significant(others_s / measured_s, 2) + of_cores;
  if (beyond_spare + resolution < kContentionCores) return {};  // its own readings say no
  if (std::isnan(timing_stage_cores) || timing_stage_cores - spare < kContentionCores) return {};
  return "other work used " + format_significant(timing_stage_cores, 2) + of_cores +
         " (the timing stage's mean: its repetitions are too short to measure it on their own)";
}

// "repetitions in two clusters: 3 near 0.015 ms and 7 near 68 ms"; empty when there are not two.
// (No commas: the text is a CSV cell that shell tools may split.)
std::string clusters(std::vector<double> wall_ms) {
  std::sort(wall_ms.begin(), wall_ms.end());
  const size_t n = wall_ms.size(), fewest = std::max<size_t>(1, n / 5);
  if (n < 2) return {};
  for (size_t split = fewest; split + fewest <= n; ++split) {
    const double below = wall_ms[split - 1], above = wall_ms[split];
    if (below <= 0 || above / below < kClusterJump) continue;
    const double below_middle = wall_ms[(split - 1) / 2], above_middle = wall_ms[split + (n - split - 1) / 2];
    return "repetitions in two clusters: " + std::to_string(split) + " near " + format_significant(below_middle, 3) +
           " ms and " + std::to_string(n - split) + " near " + format_significant(above_middle, 3) + " ms";
  }
  return {};
}

}  // namespace

std::string disturbance(const RowRepetitions& reps, int threads, int cores, double timing_stage_cores) {
  const std::string busy = contention(reps, threads, cores, timing_stage_cores);
  const std::string split = clusters(reps.wall_ms);
  if (busy.empty()) return split;
  return split.empty() ? busy : busy + "; " + split;
}

std::string machine_state_in_words(const nlohmann::json& machine) {
  if (!machine.is_object() || !machine.contains("machine_state")) return "";
  const nlohmann::json& state = machine["machine_state"];
  const int disturbed = state.value("disturbed_rows", 0);
  double timing_others = 0;
  if (state.contains("stages") && state["stages"].contains("timing"))
    timing_others = state["stages"]["timing"].value("others_cores", 0.0);
  if (state.value("cores_to_itself", false)) return "quiet";
  return "busy: other work used " + format_significant(timing_others, 2) + " cores while timing, " +
         std::to_string(disturbed) + (disturbed == 1 ? " row disturbed" : " rows disturbed");
}

}  // namespace pb::interference
