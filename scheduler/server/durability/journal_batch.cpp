#include "journal_batch.h"

#include <cstring>
#include <vector>

namespace tailcut {
namespace {

// Version 2 (written): integers as LEB128 varints, job and attempt ids as
// the zigzag difference from the previous record's, an executor identity
// as its index in the entry's table of identities (new ones follow their
// index). Version 1 (read, for Raft logs written before): fixed-width.
constexpr char kMagic[4] = {'T', 'C', 'J', 'B'};
constexpr char kVersion = 2;

void PutV(std::string* b, uint64_t v) {
  while (v >= 0x80) {
    b->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  b->push_back(static_cast<char>(v));
}
uint64_t ZigZag(uint64_t now, uint64_t before) {
  const auto d = static_cast<int64_t>(now - before);
  return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
}
void PutF(std::string* b, double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  for (int i = 0; i < 8; ++i) b->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}
void PutS(std::string* b, const std::string& s) {
  PutV(b, s.size());
  b->append(s);
}

// Reads fields off a batch; any short or malformed read marks it bad and
// reads zeros.
class BatchReader {
 public:
  // `check`: strings are skipped, not copied (a pass that only validates).
  BatchReader(std::string_view b, bool compact, bool check) : b_(b), compact_(compact), check_(check) {}
  bool done() const { return p_ == b_.size(); }
  bool ok() const { return ok_; }
  // An integer written in `bytes` bytes by version 1.
  uint64_t U(int bytes) { return compact_ ? V() : Fixed(bytes); }
  uint64_t Job() { return compact_ ? (job_ += Signed()) : Fixed(8); }
  uint64_t Attempt() { return compact_ ? (attempt_ += Signed()) : Fixed(8); }
  // Valid until the next call.
  const std::string& Identity() {
    if (!compact_) return scratch_ = S();
    const uint64_t i = V();
    if (i < identities_.size()) return identities_[i];
    if (i != identities_.size()) {
      ok_ = false;
      return scratch_;
    }
    identities_.push_back(S());
    return identities_.back();
  }
  double F() {
    uint64_t u = Fixed(8);
    double v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  }
  std::string S() {
    size_t n = U(4);
    if (!Have(n)) return {};
    std::string s = check_ ? std::string() : std::string(b_.substr(p_, n));
    p_ += n;
    return s;
  }
  char Kind() { return static_cast<char>(Fixed(1)); }
  void Fail() { ok_ = false; }

 private:
  uint64_t Fixed(int bytes) {
    if (!Have(static_cast<size_t>(bytes))) return 0;
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b_[p_ + static_cast<size_t>(i)]);
    p_ += static_cast<size_t>(bytes);
    return v;
  }
  uint64_t V() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!Have(1)) return 0;
      const auto c = static_cast<unsigned char>(b_[p_++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    ok_ = false;  // more than 10 bytes
    return 0;
  }
  uint64_t Signed() {
    const uint64_t z = V();
    return (z >> 1) ^ (~(z & 1) + 1);
  }
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
  bool compact_, check_;
  uint64_t job_ = 0, attempt_ = 0;
  std::vector<std::string> identities_;
  std::string scratch_;
};

// Decodes every record; writes them to `to` when it is set. `*unknown`: a
// record kind this build does not know, where that ended the batch.
bool Replay(std::string_view batch, JournalWriter* to, char* unknown = nullptr) {
  if (batch.size() < sizeof kMagic + 1 || std::memcmp(batch.data(), kMagic, sizeof kMagic) != 0) return false;
  const char version = batch[sizeof kMagic];
  if (version != 1 && version != kVersion) return false;
  BatchReader r(batch.substr(sizeof kMagic + 1), version == kVersion, /*check=*/to == nullptr);
  while (r.ok() && !r.done()) {
    const char kind = r.Kind();
    switch (kind) {
      case 'A': {
        JobId id = r.Job();
        std::string key = r.S(), spec = r.S();
        double at = r.F();
        if (to && r.ok()) to->JobAccepted(id, key, spec, at);
        break;
      }
      case 'T': {
        JobId job = r.Job();
        auto task = static_cast<TaskIndex>(r.U(4));
        AttemptId a = r.Attempt();
        ExecutorId e = r.U(8);
        double run = r.F();
        bool has_output = r.U(1) != 0;
        std::string output = has_output ? r.S() : std::string();
        if (to && r.ok()) to->TaskCommitted(job, task, a, e, run, has_output ? &output : nullptr);
        break;
      }
      case 'F': {
        JobId id = r.Job();
        auto state = static_cast<JobState>(r.U(1));
        std::string reason = r.S();
        double at = r.F();
        auto attempts = static_cast<uint32_t>(r.U(4)), copies = static_cast<uint32_t>(r.U(4)),
             failed = static_cast<uint32_t>(r.U(4));
        if (to && r.ok()) to->JobFinished(id, state, reason, at, attempts, copies, failed);
        break;
      }
      case 'S': {
        JobId id = r.Job();
        size_t n = r.U(4);
        std::vector<uint64_t> counts;
        for (size_t i = 0; i < n && r.ok(); ++i) counts.push_back(r.U(8));
        AttemptId since = r.U(8);
        if (to && r.ok()) to->SharesFixed(id, counts, since);
        break;
      }
      case 'P': {
        JobId job = r.Job();
        auto task = static_cast<TaskIndex>(r.U(4));
        AttemptId a = r.Attempt();
        std::string host = r.S();
        if (to && r.ok()) to->PromotionPending(job, task, a, host);
        break;
      }
      case 'O': {
        JobId job = r.Job();
        auto task = static_cast<TaskIndex>(r.U(4));
        if (to && r.ok()) to->OutputPromoted(job, task);
        break;
      }
      case 'L': {
        AttemptId a = r.Attempt();
        JobId job = r.Job();
        auto task = static_cast<TaskIndex>(r.U(4));
        const std::string& identity = r.Identity();
        if (to && r.ok()) to->AttemptLaunched(a, job, task, identity);
        break;
      }
      case 'E': {
        AttemptId a = r.Attempt();
        if (to && r.ok()) to->AttemptEnded(a);
        break;
      }
      case 'R': {
        auto epoch = static_cast<uint32_t>(r.U(4));
        if (to && r.ok()) to->RunStarted(epoch);
        break;
      }
      case 'X': {
        std::vector<JobRange> ranges;
        JobId last = 0;
        for (uint64_t i = 0, n = r.U(4); i < n && r.ok(); ++i) {
          const JobId first = last + r.U(8);
          last = first + r.U(8);
          if (last < first || (i > 0 && first <= ranges.back().last)) r.Fail();  // overflow, or not ascending
          ranges.push_back({first, last});
        }
        if (to && r.ok()) to->JobsPruned(ranges);
        break;
      }
      default:
        if (unknown) *unknown = kind;
        r.Fail();
    }
  }
  return r.ok();
}

}  // namespace

void JournalBatch::Clear() {
  bytes_.assign(kMagic, sizeof kMagic);
  bytes_.push_back(kVersion);
  records_ = 0;
  last_job_ = last_attempt_ = 0;
  identities_.clear();
}

std::string JournalBatch::Take() {
  std::string b = std::move(bytes_);
  Clear();
  return b;
}

void JournalBatch::Job(JobId id) {
  PutV(&bytes_, ZigZag(id, last_job_));
  last_job_ = id;
}

void JournalBatch::Attempt(AttemptId id) {
  PutV(&bytes_, ZigZag(id, last_attempt_));
  last_attempt_ = id;
}

void JournalBatch::JobAccepted(JobId id, const std::string& request_key, const std::string& spec,
                               double submitted_unix) {
  bytes_.push_back('A');
  Job(id);
  PutS(&bytes_, request_key);
  PutS(&bytes_, spec);
  PutF(&bytes_, submitted_unix);
  records_++;
}

void JournalBatch::TaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                                 const std::string* output) {
  bytes_.push_back('T');
  Job(job);
  PutV(&bytes_, task);
  Attempt(attempt);
  PutV(&bytes_, executor);
  PutF(&bytes_, run_s);
  PutV(&bytes_, output != nullptr);
  if (output) PutS(&bytes_, *output);
  records_++;
}

void JournalBatch::JobFinished(JobId id, JobState state, const std::string& reason, double finished_unix,
                               uint32_t attempts, uint32_t copies, uint32_t failed_attempts) {
  bytes_.push_back('F');
  Job(id);
  PutV(&bytes_, static_cast<uint64_t>(state));
  PutS(&bytes_, reason);
  PutF(&bytes_, finished_unix);
  PutV(&bytes_, attempts);
  PutV(&bytes_, copies);
  PutV(&bytes_, failed_attempts);
  records_++;
}

void JournalBatch::SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since) {
  bytes_.push_back('S');
  Job(id);
  PutV(&bytes_, counts.size());
  for (uint64_t c : counts) PutV(&bytes_, c);
  PutV(&bytes_, since);
  records_++;
}

void JournalBatch::PromotionPending(JobId job, TaskIndex task, AttemptId attempt, const std::string& host) {
  bytes_.push_back('P');
  Job(job);
  PutV(&bytes_, task);
  Attempt(attempt);
  PutS(&bytes_, host);
  records_++;
}

void JournalBatch::OutputPromoted(JobId job, TaskIndex task) {
  bytes_.push_back('O');
  Job(job);
  PutV(&bytes_, task);
  records_++;
}

void JournalBatch::AttemptLaunched(AttemptId attempt, JobId job, TaskIndex task, const std::string& identity) {
  bytes_.push_back('L');
  Attempt(attempt);
  Job(job);
  PutV(&bytes_, task);
  auto [it, added] = identities_.try_emplace(identity, identities_.size());
  PutV(&bytes_, it->second);
  if (added) PutS(&bytes_, identity);
  records_++;
}

void JournalBatch::AttemptEnded(AttemptId attempt) {
  bytes_.push_back('E');
  Attempt(attempt);
  records_++;
}

void JournalBatch::RunStarted(uint32_t epoch) {
  bytes_.push_back('R');
  PutV(&bytes_, epoch);
  records_++;
}

void JournalBatch::JobsPruned(const std::vector<JobRange>& ranges) {
  bytes_.push_back('X');
  PutV(&bytes_, ranges.size());
  JobId last = 0;
  for (const JobRange& r : ranges) {
    PutV(&bytes_, r.first - last);
    PutV(&bytes_, r.last - r.first);
    last = r.last;
  }
  records_++;
}

Status ApplyJournalBatch(std::string_view batch, JournalWriter* to) {
  char unknown = 0;
  if (!Replay(batch, nullptr, &unknown))
    return Status::InvalidArgument(
        unknown ? std::string("a journal batch with a record of kind '") + unknown +
                      "', which this build does not know: a newer replica's? Every replica must run the same "
                      "version (docs/DEPLOY.md, \"Three replicas on three machines\")"
                : "a malformed journal batch");
  Replay(batch, to);
  return Status::Ok();
}

}  // namespace tailcut
