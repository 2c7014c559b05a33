#pragma once
// Writing results without losing any: every file is written to a temporary name and renamed
// when complete; a run directory is assembled under a staging name and renamed into place, and
// never replaces an existing directory.

#include <filesystem>
#include <string>

namespace pb {

/// Writes `content` to `path` via `path.tmp-<pid>` and an atomic rename.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

/// A directory built under a staging name and published by commit(). If commit() is never called
/// (an exception, a crash) the staging directory is left as `<final>.partial-<pid>` for
/// inspection; the final name is never touched.
class StagedDirectory {
 public:
  /// Throws InputError if `final_path` already exists: runs never overwrite runs.
  explicit StagedDirectory(std::filesystem::path final_path);
  const std::filesystem::path& staging_path() const { return staging_; }
  const std::filesystem::path& final_path() const { return final_; }
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path staging_;
};

/// "20261121T210833Z-<host tag>": a UTC timestamp plus a short host tag.
std::string make_run_id();
/// results/runs/<run-id> under `root`, with a -2, -3, ... suffix if that name is taken.
std::filesystem::path fresh_run_directory(const std::filesystem::path& root, const std::string& run_id);

}  // namespace pb
