#include "tailcut/server/trace_recorder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tailcut/common/log.h"

namespace tailcut {

std::optional<TraceRow> TraceRowOf(const AttemptRecord& r) {
  if (r.outcome != AttemptOutcome::kCommitted || r.executor == 0) return std::nullopt;
  if (r.finished < 0 && r.started < 0) return std::nullopt;
  TraceRow row;
  row.job = r.job;
  row.task = r.task;
  row.executor = r.executor;
  // The result is sent the moment the run ends, while the start report is
  // coalesced with others (or missing when the result came first): end -
  // run_s places the run more exactly than `started` does (overlapping rows
  // would look like extra slots).
  const double run = std::isfinite(r.run_s) && r.run_s > 0 ? r.run_s : 0;
  row.end = r.finished >= 0 ? r.finished : r.started + run;
  row.start = run > 0 && run <= row.end ? row.end - run : std::min(row.end, std::max(0.0, r.started));
  row.task_class = r.task_class.empty() ? "task" : r.task_class;
  for (char& c : row.task_class)
    if (c == ',' || c == '\n' || c == '\r') c = '_';
  row.input_size = std::isfinite(r.input_size) && r.input_size > 0 ? r.input_size : 0;
  return row;
}

StatusOr<std::unique_ptr<TraceRecorder>> TraceRecorder::Open(TraceRecorderOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("trace_path is empty");
  if (options.max_bytes < 4096) return Status::InvalidArgument("the trace file size limit must be >= 4096 bytes");
  std::unique_ptr<TraceRecorder> t(new TraceRecorder(std::move(options)));
  MutexLock lock(t->mu_);
  if (Status s = t->OpenFile(); !s.ok()) return s;
  return t;
}

TraceRecorder::~TraceRecorder() {
  if (file_) std::fclose(file_);
}

Status TraceRecorder::OpenFile() {
  file_ = std::fopen(options_.path.c_str(), "ab");
  if (!file_) return Status::IoError("cannot open trace file '" + options_.path + "'");
  std::fseek(file_, 0, SEEK_END);
  long at = std::ftell(file_);
  bytes_ = at > 0 ? static_cast<uint64_t>(at) : 0;
  if (bytes_ == 0) {
    std::string header = std::string(kTraceHeader) + "\n";
    if (std::fputs(header.c_str(), file_) < 0 || std::fflush(file_) != 0) return Status::IoError("cannot write trace file '" + options_.path + "'");
    bytes_ = header.size();
  }
  return Status::Ok();
}

void TraceRecorder::OnAttemptEnded(const AttemptRecord& record) {
  std::optional<TraceRow> row = TraceRowOf(record);
  if (!row) return;
  std::string line = FormatTraceRow(*row);
  MutexLock lock(mu_);
  WriteLine(line);
  if (error_.ok()) ++rows_;
}

void TraceRecorder::OnCopyRefused(JobId job, TaskIndex task, std::string_view what, std::string_view why) {
  Comment("not copied: job " + std::to_string(job) + " task " + std::to_string(task) + " " + std::string(what) + ": " +
          std::string(why));
}

void TraceRecorder::Comment(const std::string& text) {
  std::string line = "# " + text;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  line += '\n';
  MutexLock lock(mu_);
  WriteLine(line);
}

void TraceRecorder::Fail(Status s) {
  TC_LOG(Warn) << s.message() << "; the attempt trace stops here (the scheduler goes on)";
  error_ = std::move(s);
}

void TraceRecorder::WriteLine(const std::string& line) {
  if (!error_.ok() || !file_) return;
  if (bytes_ + line.size() > options_.max_bytes) {
    std::fclose(file_);
    file_ = nullptr;
    const std::string old = options_.path + ".1";
    if (std::rename(options_.path.c_str(), old.c_str()) != 0) {
      Fail(Status::IoError("cannot rotate trace file '" + options_.path + "' to '" + old + "'"));
      return;
    }
    ++rotations_;
    if (Status s = OpenFile(); !s.ok()) {
      Fail(s);
      return;
    }
  }
  // Flushed per row: the file is current while the scheduler runs, and a
  // killed scheduler loses no row (one write per committed attempt).
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    Fail(Status::IoError("cannot write trace file '" + options_.path + "'"));
    return;
  }
  bytes_ += line.size();
}

uint64_t TraceRecorder::rows() const {
  MutexLock lock(mu_);
  return rows_;
}
uint64_t TraceRecorder::rotations() const {
  MutexLock lock(mu_);
  return rotations_;
}
Status TraceRecorder::status() const {
  MutexLock lock(mu_);
  return error_;
}
void TraceRecorder::Flush() {
  MutexLock lock(mu_);
  if (file_) std::fflush(file_);
}

void RecentTrace::OnAttemptEnded(const AttemptRecord& record) {
  if (capacity_ == 0) return;
  std::optional<TraceRow> row = TraceRowOf(record);
  if (!row) return;
  size_t at = slots_.size();
  if (at < capacity_) {
    slots_.emplace_back();
  } else {
    // The ring's oldest row is its job's oldest: unchain it.
    at = next_;
    next_ = (next_ + 1) % capacity_;
    const JobId gone = slots_[at].row.job;
    auto old = chains_.find(gone);
    old->second.oldest = slots_[at].next;
    if (old->second.oldest == kNone) {
      chains_.erase(old);
      if (last_chain_job_ == gone) last_chain_ = nullptr;
    }
  }
  Slot& slot = slots_[at];
  slot.row = std::move(*row);
  slot.next = kNone;
  // The last row's job first: rows come a job at a time (one hash lookup a
  // row less, issue 41); a chain stays put in the map until erased above.
  if (!last_chain_ || last_chain_job_ != slot.row.job) {
    last_chain_ = &chains_[slot.row.job];
    last_chain_job_ = slot.row.job;
  }
  Chain& chain = *last_chain_;
  if (chain.newest == kNone) {
    chain.oldest = at;  // a new chain
  } else {
    slots_[chain.newest].next = at;
  }
  chain.newest = at;
}

std::vector<TraceRow> RecentTrace::RowsOf(JobId job) const {
  std::vector<TraceRow> out;
  auto it = chains_.find(job);
  if (it == chains_.end()) return out;
  for (size_t at = it->second.oldest; at != kNone; at = slots_[at].next) out.push_back(slots_[at].row);
  return out;
}

}  // namespace tailcut
