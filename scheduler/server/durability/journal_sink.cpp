#include "journal_sink.h"

#include <chrono>

namespace tailcut {

double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

void JournalSink::OnTaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                                  const std::string* output) {
  writer_->TaskCommitted(job, task, attempt, executor, run_s, output);
}

void JournalSink::OnJobFinished(const JobStatusInfo& info) {
  writer_->JobFinished(info.id, info.state, info.reason, UnixNow(), info.attempts, info.copies, info.failed_attempts);
  if (auto it = kept_.find(info.id); it != kept_.end()) {
    for (AttemptId a : it->second) writer_->AttemptEnded(a);
    kept_.erase(it);
  }
}

void JournalSink::OnAttemptLaunched(const LaunchCmd& l, const std::string& identity) {
  writer_->AttemptLaunched(l.attempt, l.job, l.task, identity);
  must_commit_ |= !l.idempotent;
}

void JournalSink::OnAttemptEnded(const AttemptRecord& r) {
  if (r.outcome == AttemptOutcome::kExecutorLost)
    KeepUntilJobEnds(r.job, r.attempt);
  else
    writer_->AttemptEnded(r.attempt);
}

void JournalSink::OnSharesFixed(JobId job, const std::vector<uint64_t>& counts, AttemptId since) {
  writer_->SharesFixed(job, counts, since);
  must_commit_ = true;
}

void JournalSink::OnPromotionPending(const PromoteCmd& p) {
  writer_->PromotionPending(p.job, p.task, p.attempt, p.host);
  must_commit_ = true;
}

void JournalSink::OnPromotionAnswered(JobId job, TaskIndex task, AttemptId, const std::string&) {
  writer_->OutputPromoted(job, task);
}

void JournalSink::JobAccepted(JobId id, const std::string& key, const std::string& spec) {
  writer_->JobAccepted(id, key, spec, UnixNow());
}

Status JournalSink::Commit() {
  if (!writer_->dirty()) {
    must_commit_ = false;  // what it launched ended before the commit: nothing to make durable
    return Status::Ok();
  }
  if (!journal_) return Status::FailedPrecondition("a replicated journal sink commits by proposing its batch");
  Status s = journal_->Commit();
  if (s.ok()) must_commit_ = false;
  return s;
}

}  // namespace tailcut
