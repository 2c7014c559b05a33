#include "engine/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace pb {
namespace {

constexpr double kRedrawSeconds = 0.1;  // a terminal needs no more than ten redraws a second

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int terminal_width(int fd) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 100;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) return "?";
  const long total = std::lround(seconds);
  char text[32];
  if (total < 60) std::snprintf(text, sizeof text, "%ld s", total);
  else if (total < 3600) std::snprintf(text, sizeof text, "%ld min %02ld s", total / 60, total % 60);
  else std::snprintf(text, sizeof text, "%ld h %02ld min", total / 3600, total % 3600 / 60);
  return text;
}

Progress::Progress(std::ostream& out, bool live, int width, Clock clock)
    : out_(out), live_(live), width_(std::max(width, 20)), clock_(clock ? std::move(clock) : steady_seconds) {
  run_start_ = stage_start_ = clock_();
}

Progress Progress::on_stderr() {
  const bool terminal = isatty(STDERR_FILENO);
  return Progress(std::cerr, terminal, terminal ? terminal_width(STDERR_FILENO) : 100);
}

Progress::~Progress() { clear(); }

void Progress::plan(std::vector<Stage> stages) {
  // Stages not started yet are replaced; a running one keeps going until it is full.
  const size_t first_replaced = (stages_.empty() || done_in_stage_ == 0) ? stage_ : stage_ + 1;
  stages_.resize(std::min(first_replaced, stages_.size()));
  stages_.insert(stages_.end(), stages.begin(), stages.end());
  if (done_in_stage_ == 0) stage_start_ = clock_();
}

void Progress::enter_next_stage() {
  while (stage_ + 1 < stages_.size() && done_in_stage_ >= stages_[stage_].steps) {
    ++stage_;
    done_in_stage_ = 0;
    stage_start_ = clock_();
  }
}

void Progress::step(const std::string& what) {
  if (!stages_.empty()) enter_next_stage();
  step_start_ = clock_();
  if (done_in_stage_ == 0) stage_start_ = step_start_;
  ++done_in_stage_;
  what_ = what;
  draw(false);
}

void Progress::note(const std::string& line) {
  clear();
  out_ << line << "\n";
  out_.flush();
  draw(true);
}

namespace {

double sum(const std::vector<double>& values, size_t from, size_t to) {
  double total = 0;
  for (size_t i = from; i < std::min(to, values.size()); ++i) total += values[i];
  return total;
}

double stage_expected_seconds(const Progress::Stage& stage) {
  if (!stage.step_seconds.empty()) return sum(stage.step_seconds, 0, stage.step_seconds.size());
  return static_cast<double>(stage.steps) * stage.expected_seconds;
}

}  // namespace

double Progress::left_in_weighted_stage(double now) const {
  const std::vector<double>& expected = stages_[stage_].step_seconds;
  const size_t finished = done_in_stage_ > 0 ? done_in_stage_ - 1 : 0;
  const double finished_expected = sum(expected, 0, finished);
  // How the machine keeps to the plan: measured over what is finished, once that is long enough
  // to say (a second), else the plan as it stands.
  const double pace = finished_expected >= 1.0 ? (step_start_ - stage_start_) / finished_expected : 1.0;
  const double current = done_in_stage_ > 0 ? std::max(0.0, pace * sum(expected, finished, done_in_stage_) -
                                                                 (now - step_start_))
                                            : 0;
  return pace * sum(expected, done_in_stage_, expected.size()) + current;
}

double Progress::seconds_left() const {
  if (stages_.empty()) return 0;
  const Stage& current = stages_[stage_];
  const double now = clock_();
  if (!current.step_seconds.empty()) {
    double left = left_in_weighted_stage(now);
    for (size_t i = stage_ + 1; i < stages_.size(); ++i) left += stage_expected_seconds(stages_[i]);
    return left;
  }
  // The pace of this stage's finished steps once there are any, else the expected one.
  const size_t finished = done_in_stage_ > 0 ? done_in_stage_ - 1 : 0;
  const double per_step = finished > 0 ? (step_start_ - stage_start_) / static_cast<double>(finished)
                                       : current.expected_seconds;
  const size_t not_started = current.steps > done_in_stage_ ? current.steps - done_in_stage_ : 0;
  const double current_step_left = done_in_stage_ > 0 ? std::max(0.0, per_step - (now - step_start_)) : 0;
  double left = static_cast<double>(not_started) * per_step + current_step_left;
  for (size_t i = stage_ + 1; i < stages_.size(); ++i) left += stage_expected_seconds(stages_[i]);
  return left;
}

std::string Progress::status_line() const {
  if (stages_.empty()) return "";
  const Stage& current = stages_[stage_];
  std::string line = current.name + " " + std::to_string(std::min(done_in_stage_, current.steps)) +
                     "/" + std::to_string(current.steps) + ", " +
                     format_duration(clock_() - run_start_) + " elapsed, about " +
                     format_duration(seconds_left()) + " left: " + what_;
  if (line.size() >= static_cast<size_t>(width_)) line = line.substr(0, width_ - 4) + "...";
  return line;
}

void Progress::draw(bool force) {
  if (!live_ || stages_.empty()) return;
  const double now = clock_();
  if (!force && drawn_ && now - last_draw_ < kRedrawSeconds) return;
  out_ << "\r\033[K" << status_line();
  out_.flush();
  last_draw_ = now;
  drawn_ = true;
}

void Progress::clear() {
  if (!live_ || !drawn_) return;
  out_ << "\r\033[K";
  out_.flush();
  drawn_ = false;
}

}  // namespace pb
