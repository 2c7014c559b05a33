// The words a results row may hold in its naming columns (results.hpp). The backend list comes
// from the build (PHASEBENCH_KNOWN_BACKENDS: every folder backends/CMakeLists.txt adds, enabled or
// not), so adding a backend needs no edit here.

#include <sstream>
#include <vector>

#include "phasebench/results.hpp"
#include "phasebench/workload.hpp"

#ifndef PHASEBENCH_KNOWN_BACKENDS
#error "PHASEBENCH_KNOWN_BACKENDS must list the backends (set by the top-level CMakeLists.txt)"
#endif

namespace pb {
namespace {

const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    std::istringstream text(PHASEBENCH_KNOWN_BACKENDS);
    for (std::string name; std::getline(text, name, ',');)
      if (!name.empty()) list.push_back(name);
    return list;
  }();
  return names;
}

}  // namespace

bool is_size_name(const std::string& text) { return parse_size(text).has_value(); }

bool is_backend_name(const std::string& text) {
  for (const std::string& name : known_backends())
    if (name == text) return true;
  return false;
}

bool is_device_name(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

const char* known_backends_text() {
  static const std::string text = [] {
    std::string list;
    for (const std::string& name : known_backends()) list += (list.empty() ? "" : ", ") + name;
    return "a backend of this phasebench (" + list + ")";
  }();
  return text.c_str();
}

}  // namespace pb
