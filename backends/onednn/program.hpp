#pragma once
// A Program: oneDNN work bound to its memories in setup() and played, in order, by run(), so
// that run() creates no primitive and allocates no memory of its own.

#include <functional>
#include <utility>
#include <vector>

#include "backends/onednn/onednn_backend.hpp"

namespace pb::onednn_backend {

class Program {
 public:
  /// A primitive execution: one dispatched op.
  Program& add(Execution execution) {
    steps_.emplace_back([execution = std::move(execution)] { execution(); });
    return *this;
  }
  /// A host kernel over engine memory (run_host_kernel): one dispatched op, no host sync.
  template <typename Kernel>
  Program& kernel(Kernel body) {
    steps_.emplace_back([body] { run_host_kernel(body); });
    return *this;
  }
  /// Host bookkeeping between executions that dispatches nothing (e.g. renewing storage).
  Program& host_step(std::function<void()> step) {
    steps_.push_back(std::move(step));
    return *this;
  }
  Program& append(const Program& other) {
    steps_.insert(steps_.end(), other.steps_.begin(), other.steps_.end());
    return *this;
  }
  void operator()() const {
    for (const auto& step : steps_) step();
  }

 private:
  std::vector<std::function<void()>> steps_;
};

}  // namespace pb::onednn_backend
