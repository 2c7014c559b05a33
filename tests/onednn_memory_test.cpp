// The oneDNN backend's address checks (backends/onednn/memory.hpp): variants compute host
// addresses and hand them to primitives, which read and write through them inside oneDNN, where
// no sanitizer looks; checked_first turns an address past the array into an exception first.

#include <gtest/gtest.h>

#ifdef PHASEBENCH_HAS_onednn

#include <stdexcept>
#include <string>

#include "backends/onednn/memory.hpp"

namespace {

using pb::onednn_backend::checked_first;

TEST(OnednnChecks, CheckedFirstAcceptsEverySpanInsideTheArrayUpToItsLastItem) {
  EXPECT_EQ(checked_first(0, 4, 4, "rows"), 0);
  EXPECT_EQ(checked_first(3, 1, 4, "rows"), 3);
  EXPECT_EQ(checked_first(2, 2, 4, "rows"), 2);
  EXPECT_EQ(checked_first(4, 0, 4, "rows"), 4);  // an empty span at the end
}

TEST(OnednnChecks, CheckedFirstRefusesASpanPastEitherEndNamingIt) {
  EXPECT_THROW(checked_first(4, 1, 4, "rows"), std::out_of_range);   // one past the last item
  EXPECT_THROW(checked_first(3, 2, 4, "rows"), std::out_of_range);   // ends one past
  EXPECT_THROW(checked_first(-1, 1, 4, "rows"), std::out_of_range);  // starts before
  EXPECT_THROW(checked_first(0, -1, 4, "rows"), std::out_of_range);
  try {
    checked_first(2, 3, 4, "cnn_rollout: realizations");
    FAIL() << "no exception";
  } catch (const std::out_of_range& error) {
    EXPECT_EQ(std::string(error.what()), "cnn_rollout: realizations [2, 5) is outside [0, 4)");
  }
}

}  // namespace

#endif  // PHASEBENCH_HAS_onednn
