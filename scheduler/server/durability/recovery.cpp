#include "recovery.h"

#include <chrono>
#include <filesystem>

#include "tailcut/common/log.h"

namespace tailcut {

uint64_t RequestKeys::Digest(std::string_view spec_bytes) { return std::hash<std::string_view>{}(spec_bytes); }

RequestKeys::Match RequestKeys::Find(const std::string& key, uint64_t digest, JobId* job) const {
  auto it = key.empty() ? keys_.end() : keys_.find(key);
  if (it == keys_.end()) return Match::kNew;
  *job = it->second.job;
  return it->second.digest == digest ? Match::kRetry : Match::kConflict;
}

void RequestKeys::Add(const std::string& key, uint64_t digest, JobId job) {
  if (key.empty() || !keys_.emplace(key, Entry{job, digest}).second) return;
  running_.emplace(job, key);
}

void RequestKeys::Finished(JobId job, double now) {
  auto it = running_.find(job);
  if (it == running_.end()) return;  // submitted without a key
  finished_.emplace_back(now, std::move(it->second));
  running_.erase(it);
  while (keys_.size() > capacity_ && !finished_.empty() && now - finished_.front().first >= keep_finished_s_) {
    keys_.erase(finished_.front().second);
    finished_.pop_front();
  }
}

StatusOr<RecoveryStats> Recover(Journal& journal, SchedulerCore& core, const Clock& clock, SpecParser parse,
                                RequestKeys* keys, JournalSink* sink) {
  RecoveryStats stats;
  auto epoch = journal.StartRun();
  if (!epoch.ok()) return epoch.status();
  stats.epoch = *epoch;
  std::vector<JournaledJob> jobs;
  if (Status s = journal.Load(&jobs); !s.ok()) return s;
  // Journaled wall times become times on the core's clock.
  const double offset = clock.Now() - UnixNow();
  JobId max_id = 0;
  for (JournaledJob& j : jobs) {
    max_id = std::max(max_id, j.id);
    auto def = parse(j.spec);
    if (!def.ok()) {
      TC_LOG(Error) << "journal: job " << j.id << " cannot be read back (" << def.status().message()
                    << "); it is skipped";
      continue;
    }
    std::vector<CommittedOutput> commits = std::move(j.commits);
    stats.commits += commits.size();
    Status s;
    if (j.finished) {
      JobStatusInfo st;
      st.id = j.id;
      st.name = def->name;
      st.state = j.state;
      st.tasks = def->TaskCount();
      st.committed = static_cast<uint32_t>(commits.size());
      st.attempts = j.attempts;
      st.copies = j.copies;
      st.failed_attempts = j.failed_attempts;
      st.reason = j.reason;
      st.submitted = j.submitted_unix + offset;
      st.finished = j.finished_unix + offset;
      s = core.RestoreFinishedJob(j.id, std::move(def).value(), st, std::move(commits), std::move(j.promotions));
      stats.finished++;
    } else {
      s = core.RestoreJob(j.id, std::move(def).value(), j.submitted_unix + offset, std::move(commits),
                          std::move(j.share_counts), j.shares_since, std::move(j.promotions));
      stats.resumed++;
    }
    if (!s.ok()) return s;
    keys->Add(j.request_key, RequestKeys::Digest(j.spec), j.id);
    if (j.finished) keys->Finished(j.id, j.finished_unix + offset);
  }
  // Epoch e hands out attempt ids from (e << 40) + 1; the first run has no earlier one.
  const AttemptId first = (static_cast<AttemptId>(stats.epoch) << 40) + 1;
  core.ReserveIds(max_id + 1, first, stats.epoch > 1 ? (AttemptId{1} << 40) + 1 : first);
  std::vector<JournaledLaunch> launches;
  uint32_t launches_since = 0;
  if (Status s = journal.LoadLaunches(&launches, &launches_since); !s.ok()) return s;
  std::vector<std::pair<JobId, AttemptId>> rows;
  for (const JournaledLaunch& l : launches) rows.emplace_back(l.job, l.attempt);
  // Earlier runs from launches_since on journaled every launch (StartRun set it).
  std::vector<AttemptId> dropped =
      core.RestoreLaunches(std::move(launches), static_cast<AttemptId>(launches_since) << 40);
  // Both in attempt order: the rows not dropped are kept until their jobs finish.
  auto d = dropped.begin();
  for (auto [job, a] : rows) {
    if (d != dropped.end() && *d == a) {
      sink->LaunchDropped(a);
      ++d;
    } else {
      sink->KeepUntilJobEnds(job, a);
      stats.launches++;
    }
  }
  return stats;
}

Status Durability::Open(const std::string& state_dir, bool sync_full, SchedulerCore& core, const Clock& clock,
                        SpecParser parse, uint32_t retention) {
  if (state_dir.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) return Status::IoError("cannot create state_dir " + state_dir + ": " + ec.message());
  JournalOptions jo;
  jo.path = state_dir + "/journal.db";
  jo.sync_full = sync_full;
  auto j = Journal::Open(jo);
  if (!j.ok()) return j.status();
  journal_ = std::move(j).value();
  sink_ = std::make_unique<JournalSink>(journal_.get());
  core.AddObserver(sink_.get());  // before recovery: it may finish jobs
  auto rec = Recover(*journal_, core, clock, parse, &keys_, sink_.get());
  if (!rec.ok()) return rec.status();
  if (Status s = sink_->Commit(); !s.ok()) return s;
  if (Status s = sink_->Prune(retention, core.ParentsOfUnfinished()); !s.ok()) return s;
  TC_LOG(Info) << "journal " << jo.path << ": run " << rec->epoch << ", " << rec->resumed << " jobs resumed ("
               << rec->commits << " committed tasks kept, " << rec->launches
               << " attempts that only their executor's identity may adopt), " << rec->finished << " finished jobs";
  return Status::Ok();
}

StatusOr<RecoveryStats> Durability::Takeover(Journal& copy, JournalWriter* batch, SchedulerCore& core,
                                             const Clock& clock, SpecParser parse, uint32_t retention) {
  if (sink_) return Status::FailedPrecondition("a replica took over twice with one core");
  sink_ = std::make_unique<JournalSink>(batch);
  core.AddObserver(sink_.get());  // before recovery: it may finish jobs
  auto rec = Recover(copy, core, clock, parse, &keys_, sink_.get());
  if (!rec.ok()) return rec;
  batch->RunStarted(rec->epoch);
  // What Open's Prune deletes, named in the entry: every replica deletes it.
  auto pruned = copy.Prunable(retention, core.ParentsOfUnfinished());
  if (!pruned.ok()) return pruned.status();
  if (!pruned->empty()) batch->JobsPruned(*pruned);
  return rec;
}

void Durability::JobAccepted(JobId id, const std::string& key, const std::string& spec) {
  keys_.Add(key, RequestKeys::Digest(spec), id);
  if (sink_) sink_->JobAccepted(id, key, spec);
}

bool Durability::Hold(const std::string& route, const wire::ClientReply& reply) {
  if (!journal_ || (!journal_->dirty() && held_.empty())) return false;
  held_.emplace_back(route, reply);
  return true;
}

bool Durability::CommitJournal() {
  if (!sink_->dirty()) return sink_->Commit().ok();  // nothing written: no transaction to time
  auto start = std::chrono::steady_clock::now();
  Status s = sink_->Commit();
  if (on_commit) on_commit(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), s.ok());
  uint64_t held_back = 0;
  if (!s.ok() && commit_errors_.Allow(&held_back))  // retried every turn: a full disk must not fill the log too
    TC_LOG(Error) << s.message() << " (client replies held until the journal can be written)"
                  << (held_back ? "; " + std::to_string(held_back) + " more such errors not logged" : "");
  return s.ok();
}

}  // namespace tailcut
