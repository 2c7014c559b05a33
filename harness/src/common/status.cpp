#include "phasebench/status.hpp"

namespace pb {
namespace {

constexpr Status kAll[] = {Status::Ok,      Status::Fail,        Status::Mistrusted, Status::Error,
                           Status::Skipped, Status::Unsupported, Status::Caught};

}  // namespace

const char* to_string(Status status) {
  switch (status) {
    case Status::Ok: return "OK";
    case Status::Fail: return "FAIL";
    case Status::Mistrusted: return "MISTRUSTED";
    case Status::Error: return "ERROR";
    case Status::Skipped: return "SKIPPED";
    case Status::Unsupported: return "UNSUPPORTED";
    case Status::Caught: return "CAUGHT";
  }
  return "?";
}

std::optional<Status> parse_status(std::string_view word) {
  for (Status status : kAll)
    if (word == to_string(status)) return status;
  return std::nullopt;
}

std::string status_words() {
  std::string words;
  for (Status status : kAll) words += (words.empty() ? "" : ", ") + std::string(to_string(status));
  return words;
}

bool is_failure(Status status) {
  return status == Status::Fail || status == Status::Mistrusted || status == Status::Error;
}

}  // namespace pb
