#pragma once
// A variant that forwards every call to the real one: the base of the test-only wrappers that
// inject a slowdown or a fault (slowdown_injection.hpp, fault_injection.hpp), each overriding
// only what it changes. Internal to the harness.

#include <memory>
#include <utility>

#include "phasebench/variant.hpp"

namespace pb::detail {

class ForwardingVariant : public Variant {
 public:
  explicit ForwardingVariant(std::unique_ptr<Variant> inner) : inner_(std::move(inner)) {}

  std::optional<CannotRun> support() const override { return inner_->support(); }
  void setup(const ArrayMap& inputs) override { inner_->setup(inputs); }
  void poison_outputs() override { inner_->poison_outputs(); }
  void run() override { inner_->run(); }
  ArrayMap outputs() override { return inner_->outputs(); }

 protected:
  Variant& inner() { return *inner_; }

 private:
  std::unique_ptr<Variant> inner_;
};

}  // namespace pb::detail
