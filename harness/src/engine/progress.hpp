#pragma once
// What `run` tells the person watching it. A run is a sequence of stages (checking every case,
// warming each timed case up, then every timed repetition), each a count of steps: equal-sized,
// or each with its own expected length (a timed repetition of a slow case against a fast one).
//
// On a terminal: one status line, rewritten in place, with the stage, the case being worked on,
// steps done and left, and an estimate of the time left. Anywhere else (CI logs, pipes, files) the
// status line is never drawn: escape codes and hundreds of rewrites would only clutter a log.
// Permanent lines (note()) are printed either way: `run` notes each checked case and each stage.

#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace pb {

class Progress {
 public:
  struct Stage {
    std::string name;          // "checking", "warm-up", "timing"
    size_t steps = 0;
    double expected_seconds = 0;  // per step, until steps of this stage have been measured
    // When set (one value per step): each step's expected length. The time left is then the
    // expected length of the steps left, scaled by how the finished ones compared with theirs.
    std::vector<double> step_seconds;
  };
  using Clock = std::function<double()>;  // seconds since some fixed point

  /// `live`: draw the status line (a terminal of `width` columns). `clock` is for tests.
  Progress(std::ostream& out, bool live, int width = 100, Clock clock = {});
  /// On std::cerr, live when stderr is a terminal, as wide as that terminal.
  static Progress on_stderr();
  ~Progress();  // clears the status line

  /// The stages still to come, in order (replaces any not yet started).
  void plan(std::vector<Stage> stages);
  /// A step starts, on `what` (a case name). Moves to the next stage when this one is full.
  void step(const std::string& what);
  /// A permanent line, printed above the status line.
  void note(const std::string& line);

  /// The status line as it would be drawn now (without escape codes).
  std::string status_line() const;
  /// Estimated seconds until the last planned step ends.
  double seconds_left() const;

 private:
  void enter_next_stage();
  double left_in_weighted_stage(double now) const;
  void draw(bool force);
  void clear();

  std::ostream& out_;
  bool live_;
  int width_;
  Clock clock_;
  std::vector<Stage> stages_;
  size_t stage_ = 0;          // index into stages_ of the running stage
  size_t done_in_stage_ = 0;  // steps started in it
  double run_start_ = 0, stage_start_ = 0, step_start_ = 0, last_draw_ = -1;
  std::string what_;
  bool drawn_ = false;
};

/// "12 s", "3 min 05 s", "1 h 02 min".
std::string format_duration(double seconds);

}  // namespace pb
