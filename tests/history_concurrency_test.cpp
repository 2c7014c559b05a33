// Many writers, one history: shards and CI runners running `phasebench history add` at the same
// time, on a SQLite file and on a PostgreSQL server (the throwaway one, throwaway_postgres.hpp).
// Eight processes at once store every run once and whole, a run added by several of them at once
// is stored by one and reported already there by the others, and a writer killed in the middle of
// its add (held there by PHASEBENCH_HISTORY_PAUSE_AFTER_ROWS) leaves the history as it was, while
// writers waiting on it go on.

#include <sys/wait.h>

#include <array>
#include <csignal>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "history/history_sql.hpp"
#include "history/history_store.hpp"
#include "history_databases.hpp"

namespace pb::testing {
namespace {

class HistoryConcurrencyTest : public HistoryDatabaseTest {};

constexpr int kWriters = 8;

// What one run leaves in each table: runs, run_files, results, samples. A crafted run has four
// files (results.csv, samples.csv, machine.json, catalog.json), four rows and 12 samples of each.
using TableCounts = std::array<int, 4>;
constexpr TableCounts kWholeRun{1, 4, 4, 48};

// Each run id in the history and how many rows of it each table holds.
std::map<std::string, TableCounts> rows_per_run(const std::string& url) {
  const auto db = history::open_connection(url);
  std::map<std::string, TableCounts> counts;
  const char* const tables[] = {"runs", "run_files", "results", "samples"};
  for (size_t table = 0; table < 4; ++table)
    for (const history::SqlRow& row :
         db->execute(std::string("SELECT run_id, COUNT(*) FROM ") + tables[table] + " GROUP BY run_id"))
      counts[row[0].value_or("")][table] = std::stoi(row[1].value_or("0"));
  return counts;
}

// A `history add` process in the background, its output in a file.
struct Writer {
  pid_t pid = -1;
  std::filesystem::path output;
  std::string printed() const { return read_text(output); }
};

Writer start_writer(const std::string& url, const std::vector<std::filesystem::path>& runs,
                    const std::vector<std::string>& settings = {}) {
  std::vector<std::string> arguments{"history", "--db", url, "add"};
  for (const auto& run : runs) arguments.push_back(run.string());
  Writer writer;
  writer.output = fresh_temp_path("writer") += ".out";
  writer.pid = start_phasebench(arguments, settings, writer.output);
  return writer;
}

// Its exit code (128 + the signal when a signal ended it).
int wait_for(const Writer& writer) {
  int status = 0;
  if (waitpid(writer.pid, &status, 0) != writer.pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool finished(const Writer& writer, int& exit_code) {
  int status = 0;
  if (waitpid(writer.pid, &status, WNOHANG) != writer.pid) return false;
  exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

// A writer held by PHASEBENCH_HISTORY_PAUSE_AFTER_ROWS=2 inside its transaction: started, and
// known to have stopped there (it says so) when this returns.
Writer writer_paused_mid_add(const std::string& url, const std::filesystem::path& run) {
  Writer paused = start_writer(url, {run}, {"PHASEBENCH_HISTORY_PAUSE_AFTER_ROWS=2"});
  const bool stopped = within(std::chrono::seconds(30),
                              [&] { return paused.printed().find("paused after 2 rows") != std::string::npos; });
  EXPECT_TRUE(stopped) << paused.printed();
  return paused;
}

// Eight writers start together on an empty database (so the first migration races too). Each adds
// one run that all of them add, four runs of its own, and a second run all of them add.
TEST_P(HistoryConcurrencyTest, EightWritersAtOnceStoreEveryRunOnceAndWhole) {
  const auto first_shared = write_run("shared", crafted_run(run_id_at(0)));
  const auto last_shared = write_run("shared", crafted_run(run_id_at(59)));
  std::vector<Writer> writers;
  std::vector<std::string> own_ids;
  for (int w = 0; w < kWriters; ++w) {
    std::vector<std::filesystem::path> runs{first_shared};
    for (int k = 0; k < 4; ++k) {
      own_ids.push_back(run_id_at(1 + 4 * w + k));
      runs.push_back(write_run("own", crafted_run(own_ids.back())));
    }
    runs.push_back(last_shared);
    writers.push_back(start_writer(url_, runs));
  }
  std::map<std::string, int> added, already_there;
  for (const Writer& writer : writers) {
    EXPECT_EQ(wait_for(writer), 0) << writer.printed();
    const std::string printed = writer.printed();
    for (const std::string& shared : {run_id_at(0), run_id_at(59)}) {
      added[shared] += printed.find("added " + shared) != std::string::npos ? 1 : 0;
      already_there[shared] += printed.find("already there, unchanged: " + shared) != std::string::npos ? 1 : 0;
    }
  }
  for (const std::string& shared : {run_id_at(0), run_id_at(59)}) {
    EXPECT_EQ(added[shared], 1) << shared << " stored by one writer";
    EXPECT_EQ(already_there[shared], kWriters - 1) << shared << ": the others say so, as for a second add";
  }
  const auto stored = rows_per_run(url_);
  EXPECT_EQ(stored.size(), own_ids.size() + 2);
  for (const std::string& id : own_ids) EXPECT_EQ(stored.count(id) ? stored.at(id) : TableCounts{}, kWholeRun) << id;
  for (const std::string& id : {run_id_at(0), run_id_at(59)})
    EXPECT_EQ(stored.count(id) ? stored.at(id) : TableCounts{}, kWholeRun) << id;
}

// SIGKILL in the middle of an add: its transaction is rolled back, nothing of the run is left, and
// adding the run again stores it whole. Meanwhile readers never see the half-added run.
TEST_P(HistoryConcurrencyTest, AWriterKilledMidAddLeavesTheHistoryAsItWas) {
  history::HistoryStore store = history::HistoryStore::open(url_);
  for (int minute : {1, 2}) store.add(write_run("run", crafted_run(run_id_at(minute))).string(), {});
  const auto before = rows_per_run(url_);
  const std::string listed_before = run_phasebench("history --db '" + url_ + "' list").output;
  ASSERT_EQ(before.size(), 2u);

  const auto run = write_run("killed", crafted_run(run_id_at(3)));
  const Writer paused = writer_paused_mid_add(url_, run);
  EXPECT_EQ(rows_per_run(url_), before) << "uncommitted rows are visible";
  ASSERT_EQ(kill(paused.pid, SIGKILL), 0);
  EXPECT_EQ(wait_for(paused), 128 + SIGKILL);

  EXPECT_EQ(rows_per_run(url_), before);
  EXPECT_EQ(run_phasebench("history --db '" + url_ + "' list").output, listed_before);
  if (GetParam() == "sqlite")
    EXPECT_EQ(history::open_connection(url_)->execute("PRAGMA integrity_check"),
              (std::vector<history::SqlRow>{{std::string("ok")}}));

  const ProcessResult again = run_phasebench("history --db '" + url_ + "' add " + run.string());
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("added " + run_id_at(3)), std::string::npos) << again.output;
  auto expected = before;
  expected[run_id_at(3)] = kWholeRun;
  EXPECT_EQ(rows_per_run(url_), expected);
}

// Whether `pid` has the file at `path` open.
bool has_open(pid_t pid, const std::filesystem::path& path) {
  std::error_code error;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error))
    if (std::filesystem::read_symlink(fd.path(), error) == path) return true;
  return false;
}

// Writers that come while another is held mid-add wait for it (SQLite: for its lock, under the busy
// timeout, instead of failing with "database is locked"; PostgreSQL: the one adding the same run, for
// that run's row). When it is killed they go on: the same run is added by the waiting writer, not
// reported as already there, and another run is added beside it.
TEST_P(HistoryConcurrencyTest, WritersWaitingOnAKilledWriterGoOnAndStoreTheirRuns) {
  history::HistoryStore::open(url_);
  const auto same = write_run("same", crafted_run(run_id_at(3)));
  const auto other = write_run("other", crafted_run(run_id_at(4)));
  const Writer paused = writer_paused_mid_add(url_, same);
  std::vector<Writer> waiting{start_writer(url_, {same}), start_writer(url_, {other})};
  // Both have opened the file (SQLite; they start by taking the lock), or the one adding the same run
  // waits on the paused writer's transaction (PostgreSQL).
  const auto reached_the_lock = [&] {
    const auto file = std::filesystem::weakly_canonical(url_);
    if (GetParam() == "sqlite") return has_open(waiting[0].pid, file) && has_open(waiting[1].pid, file);
    return history::open_connection(url_)->execute(
               "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") !=
           std::vector<history::SqlRow>{{std::string("0")}};
  };
  EXPECT_TRUE(within(std::chrono::seconds(30), reached_the_lock));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // long enough to fail, were they not waiting
  int same_exit = -1, other_exit = -1;
  const bool same_done_early = finished(waiting[0], same_exit);
  EXPECT_FALSE(same_done_early) << "the same run was added past a writer holding it: " << waiting[0].printed();
  // On SQLite the writer holds the file's one write lock: a writer of another run waits too.
  const bool other_done_early = GetParam() == "sqlite" && finished(waiting[1], other_exit);
  EXPECT_FALSE(other_done_early) << waiting[1].printed();
  ASSERT_EQ(kill(paused.pid, SIGKILL), 0);
  EXPECT_EQ(wait_for(paused), 128 + SIGKILL);
  if (!same_done_early) same_exit = wait_for(waiting[0]);
  if (!other_done_early) other_exit = wait_for(waiting[1]);
  EXPECT_EQ(same_exit, 0) << waiting[0].printed();
  EXPECT_EQ(other_exit, 0) << waiting[1].printed();
  EXPECT_NE(waiting[0].printed().find("added " + run_id_at(3)), std::string::npos) << waiting[0].printed();
  EXPECT_NE(waiting[1].printed().find("added " + run_id_at(4)), std::string::npos) << waiting[1].printed();
  EXPECT_EQ(rows_per_run(url_),
            (std::map<std::string, TableCounts>{{run_id_at(3), kWholeRun}, {run_id_at(4), kWholeRun}}));
}

INSTANTIATE_TEST_SUITE_P(Databases, HistoryConcurrencyTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace pb::testing
