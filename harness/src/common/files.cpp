#include "phasebench/files.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>

#include "phasebench/errors.hpp"

namespace pb {
namespace fs = std::filesystem;

void write_file_atomically(const fs::path& path, const std::string& content) {
  const fs::path temporary = path.string() + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + temporary.string());
  }
  fs::rename(temporary, path);
}

StagedDirectory::StagedDirectory(fs::path final_path) : final_(std::move(final_path)) {
  if (fs::exists(final_))
    throw InputError("output directory " + final_.string() +
                     " already exists; phasebench never overwrites results: choose a new --out");
  staging_ = final_.string() + ".partial-" + std::to_string(getpid());
  fs::create_directories(staging_);
}

void StagedDirectory::commit() {
  if (fs::exists(final_))
    throw std::runtime_error(final_.string() + " appeared while the run was being written; results "
                             "kept in " + staging_.string());
  fs::rename(staging_, final_);
}

std::string make_run_id() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  std::string tag;
  for (char c : std::string(host)) {
    if (tag.size() == 12) break;
    if (std::isalnum(static_cast<unsigned char>(c))) tag += static_cast<char>(std::tolower(c));
  }
  return std::string(stamp) + "-" + (tag.empty() ? "host" : tag);
}

fs::path fresh_run_directory(const fs::path& root, const std::string& run_id) {
  fs::path candidate = root / run_id;
  for (int suffix = 2; fs::exists(candidate); ++suffix)
    candidate = root / (run_id + "-" + std::to_string(suffix));
  return candidate;
}

}  // namespace pb
