#include "journal_state_machine.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "journal_batch.h"

namespace tailcut {
namespace {
constexpr char kSqliteMagic[] = "SQLite format 3";  // with its NUL: the file's first 16 bytes

void RemoveJournalFiles(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
}
}  // namespace

StatusOr<std::unique_ptr<JournalStateMachine>> JournalStateMachine::Open(const JournalOptions& options) {
  std::unique_ptr<JournalStateMachine> m(new JournalStateMachine(options));
  auto j = Journal::Open(options);
  if (!j.ok()) return j.status();
  m->journal_ = std::move(*j);
  return m;
}

JournalStateMachine::~JournalStateMachine() {
  std::lock_guard<std::mutex> l(mu_);
  (void)FlushLocked();  // a failure loses nothing: the next start rebuilds the journal from Raft
}

Status JournalStateMachine::Apply(std::string_view entry) {
  std::lock_guard<std::mutex> l(mu_);
  if (!journal_) return Status::FailedPrecondition("replica journal " + options_.path + " is not open");
  if (Status s = ApplyJournalBatch(entry, journal_.get()); !s.ok()) return s;
  applied_++;
  return ++unflushed_ >= kMaxUnflushed ? FlushLocked() : Status::Ok();
}

Status JournalStateMachine::Flush() {
  std::lock_guard<std::mutex> l(mu_);
  return FlushLocked();
}

Status JournalStateMachine::FlushLocked() {
  if (!journal_ || unflushed_ == 0) return Status::Ok();
  unflushed_ = 0;
  return journal_->Commit();
}

Status JournalStateMachine::CopyTo(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  if (!journal_) return Status::FailedPrecondition("replica journal " + options_.path + " is not open");
  if (Status s = FlushLocked(); !s.ok()) return s;
  RemoveJournalFiles(path);
  return journal_->CopyTo(path);
}

Status JournalStateMachine::Snapshot(std::string* out) {
  std::lock_guard<std::mutex> l(mu_);
  if (!journal_) return Status::FailedPrecondition("replica journal " + options_.path + " is not open");
  if (Status s = FlushLocked(); !s.ok()) return s;
  const std::string copy = options_.path + ".snapshot";
  RemoveJournalFiles(copy);
  if (Status s = journal_->CopyTo(copy); !s.ok()) return s;
  std::ifstream in(copy, std::ios::binary);
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  bool read = in.good() || in.eof();
  RemoveJournalFiles(copy);
  return read ? Status::Ok() : Status::IoError("reading the snapshot copy " + copy);
}

Status JournalStateMachine::Restore(std::string_view snapshot) {
  if (snapshot.size() < sizeof kSqliteMagic || std::memcmp(snapshot.data(), kSqliteMagic, sizeof kSqliteMagic) != 0)
    return Status::InvalidArgument("a replica snapshot that is not a journal");
  std::lock_guard<std::mutex> l(mu_);
  journal_.reset();  // with what it had not committed: the snapshot replaces it all
  unflushed_ = 0;
  RemoveJournalFiles(options_.path);
  {
    std::ofstream f(options_.path, std::ios::binary | std::ios::trunc);
    f.write(snapshot.data(), static_cast<std::streamsize>(snapshot.size()));
    f.flush();
    if (!f) return Status::IoError("writing the snapshot to " + options_.path);
  }
  auto j = Journal::Open(options_);
  if (!j.ok()) return j.status();
  journal_ = std::move(*j);
  return Status::Ok();
}

}  // namespace tailcut
