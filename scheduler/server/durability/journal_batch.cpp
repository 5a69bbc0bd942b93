#include "journal_batch.h"

#include <cstring>

namespace tailcut {
namespace {

constexpr char kHeader[5] = {'T', 'C', 'J', 'B', 1};

void PutU(std::string* b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutF(std::string* b, double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  PutU(b, u, 8);
}
void PutS(std::string* b, const std::string& s) {
  PutU(b, s.size(), 4);
  b->append(s);
}

// Reads fields off a batch; any short read marks it bad and reads zeros.
class BatchReader {
 public:
  explicit BatchReader(std::string_view b) : b_(b) {}
  bool done() const { return p_ == b_.size(); }
  bool ok() const { return ok_; }
  uint64_t U(int bytes) {
    if (!Have(static_cast<size_t>(bytes))) return 0;
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b_[p_ + static_cast<size_t>(i)]);
    p_ += static_cast<size_t>(bytes);
    return v;
  }
  double F() {
    uint64_t u = U(8);
    double v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  }
  std::string S() {
    size_t n = U(4);
    if (!Have(n)) return {};
    std::string s(b_.substr(p_, n));
    p_ += n;
    return s;
  }
  char Kind() { return static_cast<char>(U(1)); }
  void Fail() { ok_ = false; }

 private:
  bool Have(size_t n) {
    if (!ok_ || b_.size() - p_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  std::string_view b_;
  size_t p_ = 0;
  bool ok_ = true;
};

// Decodes every record; writes them to `to` when it is set.
bool Replay(std::string_view batch, JournalWriter* to) {
  if (batch.size() < sizeof kHeader || std::memcmp(batch.data(), kHeader, sizeof kHeader) != 0) return false;
  BatchReader r(batch.substr(sizeof kHeader));
  while (r.ok() && !r.done()) {
    switch (r.Kind()) {
      case 'A': {
        JobId id = r.U(8);
        std::string key = r.S(), spec = r.S();
        double at = r.F();
        if (to && r.ok()) to->JobAccepted(id, key, spec, at);
        break;
      }
      case 'T': {
        JobId job = r.U(8);
        auto task = static_cast<TaskIndex>(r.U(4));
        AttemptId a = r.U(8);
        ExecutorId e = r.U(8);
        double run = r.F();
        bool has_output = r.U(1) != 0;
        std::string output = has_output ? r.S() : std::string();
        if (to && r.ok()) to->TaskCommitted(job, task, a, e, run, has_output ? &output : nullptr);
        break;
      }
      case 'F': {
        JobId id = r.U(8);
        auto state = static_cast<JobState>(r.U(1));
        std::string reason = r.S();
        double at = r.F();
        auto attempts = static_cast<uint32_t>(r.U(4)), copies = static_cast<uint32_t>(r.U(4)),
             failed = static_cast<uint32_t>(r.U(4));
        if (to && r.ok()) to->JobFinished(id, state, reason, at, attempts, copies, failed);
        break;
      }
      case 'S': {
        JobId id = r.U(8);
        size_t n = r.U(4);
        std::vector<uint64_t> counts;
        for (size_t i = 0; i < n && r.ok(); ++i) counts.push_back(r.U(8));
        AttemptId since = r.U(8);
        if (to && r.ok()) to->SharesFixed(id, counts, since);
        break;
      }
      case 'P': {
        JobId job = r.U(8);
        auto task = static_cast<TaskIndex>(r.U(4));
        AttemptId a = r.U(8);
        std::string host = r.S();
        if (to && r.ok()) to->PromotionPending(job, task, a, host);
        break;
      }
      case 'O': {
        JobId job = r.U(8);
        auto task = static_cast<TaskIndex>(r.U(4));
        if (to && r.ok()) to->OutputPromoted(job, task);
        break;
      }
      case 'L': {
        AttemptId a = r.U(8);
        JobId job = r.U(8);
        auto task = static_cast<TaskIndex>(r.U(4));
        std::string identity = r.S();
        if (to && r.ok()) to->AttemptLaunched(a, job, task, identity);
        break;
      }
      case 'E': {
        AttemptId a = r.U(8);
        if (to && r.ok()) to->AttemptEnded(a);
        break;
      }
      case 'R': {
        auto epoch = static_cast<uint32_t>(r.U(4));
        if (to && r.ok()) to->RunStarted(epoch);
        break;
      }
      default: r.Fail();
    }
  }
  return r.ok();
}

}  // namespace

void JournalBatch::Clear() {
  bytes_.assign(kHeader, sizeof kHeader);
  records_ = 0;
}

std::string JournalBatch::Take() {
  std::string b = std::move(bytes_);
  Clear();
  return b;
}

void JournalBatch::JobAccepted(JobId id, const std::string& request_key, const std::string& spec,
                               double submitted_unix) {
  bytes_.push_back('A');
  PutU(&bytes_, id, 8);
  PutS(&bytes_, request_key);
  PutS(&bytes_, spec);
  PutF(&bytes_, submitted_unix);
  records_++;
}

void JournalBatch::TaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                                 const std::string* output) {
  bytes_.push_back('T');
  PutU(&bytes_, job, 8);
  PutU(&bytes_, task, 4);
  PutU(&bytes_, attempt, 8);
  PutU(&bytes_, executor, 8);
  PutF(&bytes_, run_s);
  PutU(&bytes_, output != nullptr, 1);
  if (output) PutS(&bytes_, *output);
  records_++;
}

void JournalBatch::JobFinished(JobId id, JobState state, const std::string& reason, double finished_unix,
                               uint32_t attempts, uint32_t copies, uint32_t failed_attempts) {
  bytes_.push_back('F');
  PutU(&bytes_, id, 8);
  PutU(&bytes_, static_cast<uint64_t>(state), 1);
  PutS(&bytes_, reason);
  PutF(&bytes_, finished_unix);
  PutU(&bytes_, attempts, 4);
  PutU(&bytes_, copies, 4);
  PutU(&bytes_, failed_attempts, 4);
  records_++;
}

void JournalBatch::SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since) {
  bytes_.push_back('S');
  PutU(&bytes_, id, 8);
  PutU(&bytes_, counts.size(), 4);
  for (uint64_t c : counts) PutU(&bytes_, c, 8);
  PutU(&bytes_, since, 8);
  records_++;
}

void JournalBatch::PromotionPending(JobId job, TaskIndex task, AttemptId attempt, const std::string& host) {
  bytes_.push_back('P');
  PutU(&bytes_, job, 8);
  PutU(&bytes_, task, 4);
  PutU(&bytes_, attempt, 8);
  PutS(&bytes_, host);
  records_++;
}

void JournalBatch::OutputPromoted(JobId job, TaskIndex task) {
  bytes_.push_back('O');
  PutU(&bytes_, job, 8);
  PutU(&bytes_, task, 4);
  records_++;
}

void JournalBatch::AttemptLaunched(AttemptId attempt, JobId job, TaskIndex task, const std::string& identity) {
  bytes_.push_back('L');
  PutU(&bytes_, attempt, 8);
  PutU(&bytes_, job, 8);
  PutU(&bytes_, task, 4);
  PutS(&bytes_, identity);
  records_++;
}

void JournalBatch::AttemptEnded(AttemptId attempt) {
  bytes_.push_back('E');
  PutU(&bytes_, attempt, 8);
  records_++;
}

void JournalBatch::RunStarted(uint32_t epoch) {
  bytes_.push_back('R');
  PutU(&bytes_, epoch, 4);
  records_++;
}

Status ApplyJournalBatch(std::string_view batch, JournalWriter* to) {
  if (!Replay(batch, nullptr)) return Status::InvalidArgument("a malformed journal batch");
  Replay(batch, to);
  return Status::Ok();
}

}  // namespace tailcut
