#include "tailcut/server/journal.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "journal_commits.h"

namespace tailcut {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
  id INTEGER PRIMARY KEY, request_key TEXT NOT NULL, spec BLOB NOT NULL, submitted REAL NOT NULL,
  finished INTEGER NOT NULL DEFAULT 0, state INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '',
  finished_at REAL NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, copies INTEGER NOT NULL DEFAULT 0,
  failed_attempts INTEGER NOT NULL DEFAULT 0);
-- Commits in batches: one row per job per group commit, packed records.
-- No index on job: recovery reads every row in order and a prune scans
-- it once (at start, or a replica's takeover), while an index would cost a page write per group commit.
CREATE TABLE IF NOT EXISTS commits(job INTEGER NOT NULL, batch BLOB NOT NULL);
-- A divisible job's units per task (u64 each, host byte order), once fixed,
-- and the first attempt id of the run that fixed them.
CREATE TABLE IF NOT EXISTS shares(job INTEGER PRIMARY KEY, counts BLOB NOT NULL, since INTEGER NOT NULL);
-- Committed tasks of jobs with output_dir whose attempt directory is not
-- promoted yet (docs/JOBS.md, "Output directories"); a row goes when it is.
CREATE TABLE IF NOT EXISTS promotions(job INTEGER NOT NULL, task INTEGER NOT NULL, attempt INTEGER NOT NULL,
  host TEXT NOT NULL, PRIMARY KEY(job, task));
-- Attempts handed out and the executor identity each went to, so that after
-- a restart only that identity adopts one (docs/SECURITY.md). A row goes
-- when its attempt ends, or with its job when it left with its executor;
-- launched and ended within one group commit, it is never written. Keyed by
-- the attempt id, which only grows: inserts append to the b-tree.
CREATE TABLE IF NOT EXISTS launches(attempt INTEGER PRIMARY KEY, job INTEGER NOT NULL, task INTEGER NOT NULL,
  identity BLOB NOT NULL);
)sql";

}  // namespace

using journal_detail::Batch;
using journal_detail::Decode;

class Journal::Impl {
 public:
  ~Impl() {
    for (sqlite3_stmt* s :
         {insert_job_, insert_commits_, insert_shares_, finish_job_, begin_, commit_, insert_promotion_,
          drop_promotion_, insert_launch_, insert_launches_, drop_launch_, add_pruned_})
      sqlite3_finalize(s);
    if (db_) sqlite3_close(db_);
  }

  Status Open(const JournalOptions& o) {
    path_ = o.path;
    if (sqlite3_open_v2(o.path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK)
      return Error("cannot open");
    // Exclusive: one scheduler owns its journal (a second one started on the
    // same state_dir is refused), and WAL needs no shared-memory index, which
    // saves system calls on every group commit.
    std::string pragmas = std::string("PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=") +
                          (o.sync_full ? "FULL" : "NORMAL") + ";";
    // The lock is taken by the first access: take it now, so that a second
    // scheduler on the same state_dir fails here, with a clear message.
    if (Status s = Exec(pragmas + " BEGIN IMMEDIATE; COMMIT;"); !s.ok()) {
      if (sqlite3_errcode(db_) == SQLITE_BUSY)
        return Status::Unavailable("journal " + path_ + " is in use (another scheduler on this state_dir?)");
      return s;
    }
    if (Status s = Exec(kSchema); !s.ok()) return s;
    if (Status s = Prepare("INSERT INTO jobs(id, request_key, spec, submitted) VALUES(?, ?, ?, ?)", &insert_job_);
        !s.ok())
      return s;
    if (Status s = Prepare("INSERT INTO commits(job, batch) VALUES(?, ?)", &insert_commits_); !s.ok()) return s;
    if (Status s = Prepare("INSERT OR REPLACE INTO shares(job, counts, since) VALUES(?, ?, ?)", &insert_shares_);
        !s.ok())
      return s;
    if (Status s = Prepare("INSERT OR REPLACE INTO promotions(job, task, attempt, host) VALUES(?, ?, ?, ?)",
                           &insert_promotion_);
        !s.ok())
      return s;
    if (Status s = Prepare("DELETE FROM promotions WHERE job = ? AND task = ?", &drop_promotion_); !s.ok()) return s;
    if (Status s = Prepare("INSERT OR REPLACE INTO launches(attempt, job, task, identity) VALUES(?, ?, ?, ?)",
                           &insert_launch_);
        !s.ok())
      return s;
    std::string rows = "INSERT OR REPLACE INTO launches(attempt, job, task, identity) VALUES(?, ?, ?, ?)";
    for (size_t i = 1; i < kLaunchRows; ++i) rows += ", (?, ?, ?, ?)";
    if (Status s = Prepare(rows.c_str(), &insert_launches_); !s.ok()) return s;
    if (Status s = Prepare("DELETE FROM launches WHERE attempt BETWEEN ? AND ?", &drop_launch_); !s.ok()) return s;
    if (Status s = Exec("CREATE TEMP TABLE pruned(first INTEGER PRIMARY KEY, last INTEGER NOT NULL)"); !s.ok())
      return s;  // WritePruned's
    if (Status s = Prepare("INSERT INTO temp.pruned(first, last) VALUES(?, ?)", &add_pruned_); !s.ok()) return s;
    if (Status s = Prepare("BEGIN IMMEDIATE", &begin_); !s.ok()) return s;
    if (Status s = Prepare("COMMIT", &commit_); !s.ok()) return s;
    return Prepare(
        "UPDATE jobs SET finished = 1, state = ?, reason = ?, finished_at = ?, attempts = ?, copies = ?, "
        "failed_attempts = ? WHERE id = ?",
        &finish_job_);
  }

  StatusOr<uint32_t> StartRun() {
    if (Status s = Exec("INSERT INTO meta(key, value) VALUES('epoch', 1) "
                        "ON CONFLICT(key) DO UPDATE SET value = value + 1; "
                        // The first run that journals launches: earlier runs' attempts have no rows.
                        "INSERT OR IGNORE INTO meta(key, value) SELECT 'launches_since', value FROM meta "
                        "WHERE key = 'epoch'");
        !s.ok())
      return s;
    sqlite3_stmt* q = nullptr;
    if (Status s = Prepare("SELECT value FROM meta WHERE key = 'epoch'", &q); !s.ok()) return s;
    uint32_t epoch = sqlite3_step(q) == SQLITE_ROW ? static_cast<uint32_t>(sqlite3_column_int64(q, 0)) : 0;
    sqlite3_finalize(q);
    if (epoch == 0) return Error("no epoch after starting a run");
    return epoch;
  }

  Status Load(std::vector<JournaledJob>* jobs) {
    sqlite3_stmt* q = nullptr;
    if (Status s = Prepare("SELECT id, request_key, spec, submitted, finished, state, reason, finished_at, attempts, "
                           "copies, failed_attempts FROM jobs ORDER BY id",
                           &q);
        !s.ok())
      return s;
    std::unordered_map<JobId, size_t> index;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      JournaledJob j;
      j.id = static_cast<JobId>(sqlite3_column_int64(q, 0));
      j.request_key = Text(q, 1);
      j.spec = Blob(q, 2);
      j.submitted_unix = sqlite3_column_double(q, 3);
      j.finished = sqlite3_column_int(q, 4) != 0;
      j.state = static_cast<JobState>(sqlite3_column_int(q, 5));
      j.reason = Text(q, 6);
      j.finished_unix = sqlite3_column_double(q, 7);
      j.attempts = static_cast<uint32_t>(sqlite3_column_int64(q, 8));
      j.copies = static_cast<uint32_t>(sqlite3_column_int64(q, 9));
      j.failed_attempts = static_cast<uint32_t>(sqlite3_column_int64(q, 10));
      index[j.id] = jobs->size();
      jobs->push_back(std::move(j));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return Error("reading jobs");
    if (Status s = Prepare("SELECT job, batch FROM commits ORDER BY rowid", &q); !s.ok()) return s;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      auto it = index.find(static_cast<JobId>(sqlite3_column_int64(q, 0)));
      if (it == index.end()) continue;  // pruned job
      auto* p = static_cast<const char*>(sqlite3_column_blob(q, 1));
      int n = sqlite3_column_bytes(q, 1);
      if (n > 0 && !Decode(p, p + n, &(*jobs)[it->second].commits)) {
        sqlite3_finalize(q);
        return Status::IoError(path_ + ": a corrupt commit record of job " + std::to_string(it->first));
      }
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return Error("reading commits");
    if (Status s = Prepare("SELECT job, counts, since FROM shares", &q); !s.ok()) return s;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      auto it = index.find(static_cast<JobId>(sqlite3_column_int64(q, 0)));
      const std::string b = Blob(q, 1);
      if (it == index.end() || b.size() % sizeof(uint64_t) != 0) continue;  // pruned, or not counts: sized again
      JournaledJob& j = (*jobs)[it->second];
      j.share_counts.resize(b.size() / sizeof(uint64_t));
      std::memcpy(j.share_counts.data(), b.data(), b.size());
      j.shares_since = static_cast<AttemptId>(sqlite3_column_int64(q, 2));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return Error("reading shares");
    if (Status s = Prepare("SELECT job, task, attempt, host FROM promotions ORDER BY job, task", &q); !s.ok()) return s;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      auto it = index.find(static_cast<JobId>(sqlite3_column_int64(q, 0)));
      if (it == index.end()) continue;  // pruned
      (*jobs)[it->second].promotions.push_back(PendingPromotion{static_cast<TaskIndex>(sqlite3_column_int64(q, 1)),
                                                                static_cast<AttemptId>(sqlite3_column_int64(q, 2)),
                                                                Text(q, 3)});
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? Status::Ok() : Error("reading promotions");
  }

  Status LoadLaunches(std::vector<JournaledLaunch>* launches, uint32_t* since_epoch) {
    sqlite3_stmt* q = nullptr;
    if (Status s = Prepare("SELECT value FROM meta WHERE key = 'launches_since'", &q); !s.ok()) return s;
    *since_epoch = sqlite3_step(q) == SQLITE_ROW ? static_cast<uint32_t>(sqlite3_column_int64(q, 0)) : 0;
    sqlite3_finalize(q);
    if (Status s = Prepare("SELECT attempt, job, task, identity FROM launches ORDER BY attempt", &q); !s.ok()) return s;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
      launches->push_back(JournaledLaunch{static_cast<AttemptId>(sqlite3_column_int64(q, 0)),
                                          static_cast<JobId>(sqlite3_column_int64(q, 1)),
                                          static_cast<TaskIndex>(sqlite3_column_int64(q, 2)), Blob(q, 3)});
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? Status::Ok() : Error("reading launches");
  }

  // Performance: a launch is a row in a vector (ids rise, so it stays in
  // id order) and points at its executor's identity, kept once per turn: no
  // tree node and no copy of the identity per launch (issue 41).
  void AttemptLaunched(AttemptId a, JobId job, TaskIndex task, const std::string& identity) {
    const std::string* id = &*identities_.insert(identity).first;
    auto at = launched_.end();
    if (!launched_.empty() && launched_.back().attempt >= a)  // not expected: ids only rise
      at = std::lower_bound(launched_.begin(), launched_.end(), a, ByAttempt());
    if (at != launched_.end() && at->attempt == a) {
      if (at->ended) ++launched_live_;
      *at = Launch{a, job, task, id, false};
      return;
    }
    launched_.insert(at, Launch{a, job, task, id, false});
    ++launched_live_;
  }
  void AttemptEnded(AttemptId a) {
    // Attempts mostly end in the order they were launched: the one after
    // the last found is looked at first (a binary search per ended attempt
    // was 3-4% of a no-op's scheduler time, issue 41). Same entry either
    // way: ids in launched_ are unique and sorted.
    auto at = end_hint_ < launched_.size() && launched_[end_hint_].attempt == a
                  ? launched_.begin() + static_cast<std::ptrdiff_t>(end_hint_)
                  : std::lower_bound(launched_.begin(), launched_.end(), a, ByAttempt());
    end_hint_ = static_cast<size_t>(at - launched_.begin()) + 1;
    if (at != launched_.end() && at->attempt == a && !at->ended) {
      at->ended = true;  // never written
      --launched_live_;
      return;
    }
    ended_.push_back(a);
  }

  void JobAccepted(JobId id, const std::string& key, const std::string& spec, double submitted) {
    accepted_.push_back({id, key, spec, submitted});
  }
  void TaskCommitted(JobId job, TaskIndex t, AttemptId a, ExecutorId e, double run_s, const std::string* output) {
    batches_[job].Add(t, a, e, run_s, output);
  }
  void JobFinished(JobId id, JobState state, const std::string& reason, double at, uint32_t attempts, uint32_t copies,
                   uint32_t failed) {
    finished_.push_back({id, state, reason, at, attempts, copies, failed});
  }
  void SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since) {
    Shares& s = shares_[id];
    s.counts.assign(reinterpret_cast<const char*>(counts.data()), counts.size() * sizeof(uint64_t));
    s.since = since;
  }
  void Promotion(JobId job, TaskIndex task, AttemptId attempt, const std::string* host) {
    promotions_.push_back({job, task, attempt, host ? *host : "", host != nullptr});
  }
  void RunStarted(uint32_t epoch) { run_started_ = std::max(run_started_, epoch); }
  bool dirty() const {
    return run_started_ > 0 || !pruned_.empty() || !accepted_.empty() || !batches_.empty() || !finished_.empty() ||
           !shares_.empty() || !promotions_.empty() || launched_live_ > 0 || !ended_.empty();
  }

  Status Commit() {
    if (!dirty()) return Status::Ok();
    if (Status s = Step(begin_); !s.ok()) return s;
    Status s = WriteAll();
    if (!s.ok()) {
      (void)Exec("ROLLBACK");  // the original error is the one to report
      return s;
    }
    if (Status c = Step(commit_); !c.ok()) return c;
    run_started_ = 0;
    pruned_.clear();
    accepted_.clear();
    batches_.clear();
    finished_.clear();
    shares_.clear();
    promotions_.clear();
    launched_.clear();
    launched_live_ = 0;
    identities_.clear();
    ended_.clear();
    return Status::Ok();
  }

  Status CopyTo(const std::string& path) {
    sqlite3_stmt* q = nullptr;
    if (Status s = Prepare("VACUUM INTO ?", &q); !s.ok()) return s;
    sqlite3_bind_text(q, 1, path.data(), static_cast<int>(path.size()), SQLITE_STATIC);
    return Step(q, /*finalize=*/true);
  }

  StatusOr<std::vector<JobRange>> Prunable(uint32_t keep, const std::vector<JobId>& parents) {
    sqlite3_stmt* q = nullptr;
    if (Status s = Prepare("SELECT id FROM jobs WHERE finished = 1 ORDER BY id DESC LIMIT -1 OFFSET ?", &q); !s.ok())
      return s;
    sqlite3_bind_int64(q, 1, keep);
    std::vector<JobId> old;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) old.push_back(static_cast<JobId>(sqlite3_column_int64(q, 0)));
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return Error("reading finished jobs");
    const std::unordered_set<JobId> pinned(parents.begin(), parents.end());
    std::vector<JobRange> ranges;
    for (auto it = old.rbegin(); it != old.rend(); ++it) {  // ascending
      if (pinned.count(*it)) continue;
      if (!ranges.empty() && ranges.back().last + 1 == *it)
        ranges.back().last = *it;
      else
        ranges.push_back({*it, *it});
    }
    return ranges;
  }

  Status Prune(uint32_t keep, const std::vector<JobId>& parents) {
    auto ranges = Prunable(keep, parents);
    if (!ranges.ok()) return ranges.status();
    JobsPruned(*ranges);
    return Commit();
  }

  void JobsPruned(const std::vector<JobRange>& ranges) { pruned_.insert(pruned_.end(), ranges.begin(), ranges.end()); }

 private:
  struct Accepted {
    JobId id;
    std::string key, spec;
    double submitted;
  };
  struct Finished {
    JobId id;
    JobState state;
    std::string reason;
    double at;
    uint32_t attempts, copies, failed;
  };

  Status WriteAll() {
    if (run_started_ > 0 &&  // as StartRun, to at least the given epoch
        !Exec("INSERT INTO meta(key, value) VALUES('epoch', " + std::to_string(run_started_) +
              ") ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value); INSERT OR IGNORE INTO "
              "meta(key, value) SELECT 'launches_since', value FROM meta WHERE key = 'epoch'")
             .ok())
      return Error("starting a run");
    for (const Accepted& a : accepted_) {
      sqlite3_bind_int64(insert_job_, 1, static_cast<sqlite3_int64>(a.id));
      sqlite3_bind_text(insert_job_, 2, a.key.data(), static_cast<int>(a.key.size()), SQLITE_STATIC);
      sqlite3_bind_blob(insert_job_, 3, a.spec.data(), static_cast<int>(a.spec.size()), SQLITE_STATIC);
      sqlite3_bind_double(insert_job_, 4, a.submitted);
      if (Status s = Step(insert_job_); !s.ok()) return s;
    }
    // Shares before commits: a job's first launches and its commits may
    // share a group commit, and recovery reads both anyway.
    for (const auto& [job, shares] : shares_) {
      sqlite3_bind_int64(insert_shares_, 1, static_cast<sqlite3_int64>(job));
      sqlite3_bind_blob(insert_shares_, 2, shares.counts.data(), static_cast<int>(shares.counts.size()), SQLITE_STATIC);
      sqlite3_bind_int64(insert_shares_, 3, static_cast<sqlite3_int64>(shares.since));
      if (Status s = Step(insert_shares_); !s.ok()) return s;
    }
    for (auto& [job, batch] : batches_) {
      batch.Close();
      sqlite3_bind_int64(insert_commits_, 1, static_cast<sqlite3_int64>(job));
      sqlite3_bind_blob(insert_commits_, 2, batch.bytes.data(), static_cast<int>(batch.bytes.size()), SQLITE_STATIC);
      if (Status s = Step(insert_commits_); !s.ok()) return s;
    }
    // After the commits they belong to; in order, so a promotion answered
    // in the turn it was made leaves no row.
    for (const PromotionOp& op : promotions_) {
      sqlite3_stmt* st = op.pending ? insert_promotion_ : drop_promotion_;
      sqlite3_bind_int64(st, 1, static_cast<sqlite3_int64>(op.job));
      sqlite3_bind_int64(st, 2, op.task);
      if (op.pending) {
        sqlite3_bind_int64(st, 3, static_cast<sqlite3_int64>(op.attempt));
        sqlite3_bind_text(st, 4, op.host.data(), static_cast<int>(op.host.size()), SQLITE_STATIC);
      }
      if (Status s = Step(st); !s.ok()) return s;
    }
    // Performance: kLaunchRows launches to a statement, and the ended ones
    // as ranges of ids: a few statements per turn, not two per task (the
    // journal was ~15% of the scheduler's CPU per no-op, issue 41).
    size_t rows = launched_live_ - launched_live_ % kLaunchRows, row = 0;  // rows in full statements
    for (const Launch& l : launched_) {
      if (l.ended) continue;
      sqlite3_stmt* st = row < rows ? insert_launches_ : insert_launch_;
      const int at = row < rows ? 4 * static_cast<int>(row % kLaunchRows) : 0;
      sqlite3_bind_int64(st, at + 1, static_cast<sqlite3_int64>(l.attempt));
      sqlite3_bind_int64(st, at + 2, static_cast<sqlite3_int64>(l.job));
      sqlite3_bind_int64(st, at + 3, l.task);
      sqlite3_bind_blob(st, at + 4, l.identity->data(), static_cast<int>(l.identity->size()), SQLITE_STATIC);
      ++row;
      if (st == insert_launch_ || row % kLaunchRows == 0)
        if (Status s = Step(st); !s.ok()) return s;
    }
    std::sort(ended_.begin(), ended_.end());
    for (size_t i = 0, j = 0; i < ended_.size(); i = ++j) {
      while (j + 1 < ended_.size() && ended_[j + 1] <= ended_[j] + 1) ++j;  // ids i..j: every one ended
      sqlite3_bind_int64(drop_launch_, 1, static_cast<sqlite3_int64>(ended_[i]));
      sqlite3_bind_int64(drop_launch_, 2, static_cast<sqlite3_int64>(ended_[j]));
      if (Status s = Step(drop_launch_); !s.ok()) return s;
    }
    for (const Finished& f : finished_) {
      sqlite3_bind_int(finish_job_, 1, static_cast<int>(f.state));
      sqlite3_bind_text(finish_job_, 2, f.reason.data(), static_cast<int>(f.reason.size()), SQLITE_STATIC);
      sqlite3_bind_double(finish_job_, 3, f.at);
      sqlite3_bind_int64(finish_job_, 4, f.attempts);
      sqlite3_bind_int64(finish_job_, 5, f.copies);
      sqlite3_bind_int64(finish_job_, 6, f.failed);
      sqlite3_bind_int64(finish_job_, 7, static_cast<sqlite3_int64>(f.id));
      if (Status s = Step(finish_job_); !s.ok()) return s;
    }
    return WritePruned();
  }

  // Last: whatever this commit wrote of a pruned job goes too. The ranges
  // go to a temporary table, merged, so that each table is scanned once
  // (commits has no index on job) and a row looks up the one range that
  // can hold it: nothing is expanded id by id, however long a range.
  Status WritePruned() {
    if (pruned_.empty()) return Status::Ok();
    std::sort(pruned_.begin(), pruned_.end(), [](const JobRange& a, const JobRange& b) { return a.first < b.first; });
    std::vector<JobRange> merged;
    for (const JobRange& r : pruned_) {
      if (!merged.empty() && r.first <= merged.back().last + 1)
        merged.back().last = std::max(merged.back().last, r.last);
      else
        merged.push_back(r);
    }
    for (const JobRange& r : merged) {
      sqlite3_bind_int64(add_pruned_, 1, static_cast<sqlite3_int64>(r.first));
      sqlite3_bind_int64(add_pruned_, 2, static_cast<sqlite3_int64>(r.last));
      if (Status s = Step(add_pruned_); !s.ok()) return s;
    }
    std::string sql;
    for (const char* col : {"commits.job", "shares.job", "promotions.job", "jobs.id"}) {
      const std::string c(col);
      sql += "DELETE FROM " + c.substr(0, c.find('.')) + " WHERE (SELECT last FROM temp.pruned WHERE first <= " + c +
             " ORDER BY first DESC LIMIT 1) >= " + c + "; ";
    }
    return Exec(sql + "DELETE FROM temp.pruned");
  }

  Status Step(sqlite3_stmt* st, bool finalize = false) {
    int rc = sqlite3_step(st);
    Status s = rc == SQLITE_DONE ? Status::Ok() : Error("writing");
    if (finalize) {
      sqlite3_finalize(st);
    } else {
      sqlite3_reset(st);
      sqlite3_clear_bindings(st);
    }
    return s;
  }
  Status Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return Status::Ok();
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::IoError("journal " + path_ + ": " + m);
  }
  Status Prepare(const char* sql, sqlite3_stmt** st) {
    return sqlite3_prepare_v2(db_, sql, -1, st, nullptr) == SQLITE_OK ? Status::Ok() : Error("preparing a statement");
  }
  Status Error(const std::string& what) const {
    return Status::IoError("journal " + path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "no database"));
  }
  static std::string Text(sqlite3_stmt* q, int col) {
    auto* p = sqlite3_column_text(q, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(q, col))) : "";
  }
  static std::string Blob(sqlite3_stmt* q, int col) {
    auto* p = static_cast<const char*>(sqlite3_column_blob(q, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(q, col))) : "";
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_job_ = nullptr;
  sqlite3_stmt* insert_commits_ = nullptr;
  sqlite3_stmt* insert_shares_ = nullptr;
  sqlite3_stmt* finish_job_ = nullptr;
  sqlite3_stmt* insert_promotion_ = nullptr;
  sqlite3_stmt* drop_promotion_ = nullptr;
  sqlite3_stmt* insert_launch_ = nullptr;
  static constexpr size_t kLaunchRows = 32;
  sqlite3_stmt* insert_launches_ = nullptr;  // kLaunchRows rows
  sqlite3_stmt* drop_launch_ = nullptr;      // a range of ids
  sqlite3_stmt* add_pruned_ = nullptr;       // a range of job ids, to temp.pruned
  sqlite3_stmt* begin_ = nullptr;  // prepared once: a group commit parses no SQL
  sqlite3_stmt* commit_ = nullptr;
  uint32_t run_started_ = 0;  // RunStarted's epoch, until the commit
  std::vector<JobRange> pruned_;
  std::vector<Accepted> accepted_;
  std::map<JobId, Batch> batches_;
  std::vector<Finished> finished_;
  struct Shares {
    std::string counts;  // packed
    AttemptId since = 0;
  };
  std::map<JobId, Shares> shares_;
  struct PromotionOp {
    JobId job;
    TaskIndex task;
    AttemptId attempt;
    std::string host;
    bool pending;  // else: promoted (or failed), the row goes
  };
  std::vector<PromotionOp> promotions_;
  struct Launch {
    AttemptId attempt;
    JobId job;
    TaskIndex task;
    const std::string* identity;  // in identities_
    bool ended;                   // ended before its commit: never written
  };
  struct ByAttempt {
    bool operator()(const Launch& l, AttemptId a) const { return l.attempt < a; }
  };
  std::vector<Launch> launched_;  // in id order: rows append
  size_t launched_live_ = 0;      // of launched_, not ended
  size_t end_hint_ = 0;           // where AttemptEnded looks first
  std::unordered_set<std::string> identities_;
  std::vector<AttemptId> ended_;                   // rows to delete
};

StatusOr<std::unique_ptr<Journal>> Journal::Open(const JournalOptions& options) {
  auto impl = std::make_unique<Impl>();
  if (Status s = impl->Open(options); !s.ok()) return s;
  return std::unique_ptr<Journal>(new Journal(std::move(impl)));
}
Journal::Journal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Journal::~Journal() = default;
StatusOr<uint32_t> Journal::StartRun() { return impl_->StartRun(); }
Status Journal::Load(std::vector<JournaledJob>* jobs) { return impl_->Load(jobs); }
void Journal::JobAccepted(JobId id, const std::string& key, const std::string& spec, double submitted_unix) {
  impl_->JobAccepted(id, key, spec, submitted_unix);
}
void Journal::TaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                            const std::string* output) {
  impl_->TaskCommitted(job, task, attempt, executor, run_s, output);
}
void Journal::JobFinished(JobId id, JobState state, const std::string& reason, double finished_unix, uint32_t attempts,
                          uint32_t copies, uint32_t failed_attempts) {
  impl_->JobFinished(id, state, reason, finished_unix, attempts, copies, failed_attempts);
}
void Journal::SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since) {
  impl_->SharesFixed(id, counts, since);
}
void Journal::PromotionPending(JobId job, TaskIndex task, AttemptId attempt, const std::string& host) {
  impl_->Promotion(job, task, attempt, &host);
}
void Journal::OutputPromoted(JobId job, TaskIndex task) { impl_->Promotion(job, task, 0, nullptr); }
Status Journal::LoadLaunches(std::vector<JournaledLaunch>* launches, uint32_t* since_epoch) {
  return impl_->LoadLaunches(launches, since_epoch);
}
void Journal::AttemptLaunched(AttemptId attempt, JobId job, TaskIndex task, const std::string& identity) {
  impl_->AttemptLaunched(attempt, job, task, identity);
}
void Journal::AttemptEnded(AttemptId attempt) { impl_->AttemptEnded(attempt); }
void Journal::RunStarted(uint32_t epoch) { impl_->RunStarted(epoch); }
void Journal::JobsPruned(const std::vector<JobRange>& ranges) { impl_->JobsPruned(ranges); }
bool Journal::dirty() const { return impl_->dirty(); }
Status Journal::Commit() { return impl_->Commit(); }
Status Journal::Prune(uint32_t keep, const std::vector<JobId>& parents) { return impl_->Prune(keep, parents); }
StatusOr<std::vector<JobRange>> Journal::Prunable(uint32_t keep, const std::vector<JobId>& parents) {
  return impl_->Prunable(keep, parents);
}
Status Journal::CopyTo(const std::string& path) { return impl_->CopyTo(path); }

}  // namespace tailcut
