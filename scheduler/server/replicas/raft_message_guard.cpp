#include "raft_message_guard.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace tailcut {
namespace {

// libraft 0.15's message types (raft.h, enum raft_io_type) and entry types
// (enum raft_entry_type), spelled here so this file needs no libraft header.
constexpr uint64_t kAppend = 1, kAppendResult = 2, kVote = 3, kVoteResult = 4, kSnapshot = 5, kTimeoutNow = 6;
constexpr uint64_t kEntryCommand = 1, kEntryChange = 3;
constexpr uint64_t kConfFormat = 1;       // configuration.c's ENCODING_FORMAT
constexpr uint64_t kMaxConfServers = 16;  // a configuration naming more is refused
constexpr uint64_t kAppendFixed = 40;     // term, previous index and term, commit index, entry count
constexpr uint64_t kSnapshotFixed = 48;   // term, last index and term, conf index, conf length, data length
// libraft 0.15 counts 8 bytes more in an append's and a snapshot's header
// length than it writes (a leader id): they follow the fields, unused.
constexpr uint64_t kUnused = 8;
constexpr uint64_t kConfLenAt = 32;  // a snapshot header's configuration length
// Terms climb one an election: no group reaches 2^62 (an election a
// millisecond for 146 million years), and a term near 2^64 that Raft
// adopted would wrap at its next election, for good (the term is on disk).
constexpr uint64_t kMaxTerm = uint64_t{1} << 62;

uint64_t Le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

const char* TypeName(uint64_t type) {
  switch (type) {
    case kAppend: return "an append";
    case kAppendResult: return "an append result";
    case kVote: return "a vote request";
    case kVoteResult: return "a vote result";
    case kSnapshot: return "a snapshot";
    case kTimeoutNow: return "a timeout-now";
    default: return "a message";
  }
}

// A configuration as configuration.c encodes it: format byte, server count
// (u64), then per server its id (u64), NUL-terminated address and role
// byte. libraft's decoder trusts the count and reads past the buffer.
bool ConfValid(const unsigned char* c, size_t len) {
  if (len < 9 || c[0] != kConfFormat) return false;
  uint64_t n = Le(c + 1, 8);
  if (n == 0 || n > kMaxConfServers) return false;
  size_t at = 9;
  for (uint64_t i = 0; i < n; ++i) {
    if (len - at < 8) return false;
    at += 8;  // id
    const void* nul = std::memchr(c + at, 0, len - at);
    if (!nul || nul == c + at) return false;  // unterminated or empty address
    at = static_cast<size_t>(static_cast<const unsigned char*>(nul) - c) + 1;
    if (at >= len || c[at] > 2) return false;  // role: standby, voter or spare
    at++;
  }
  return true;
}

}  // namespace

void RaftMessageGuard::Init(const RaftMessageLimits& limits) {
  *this = RaftMessageGuard();
  limits_ = limits;
}

RaftMessageGuard::Result RaftMessageGuard::Bad(const char* what) {
  std::snprintf(what_buf_, sizeof what_buf_, "%s", what);
  what_ = what_buf_;
  return Result::kBad;
}

void RaftMessageGuard::EndOfMessage() {
  completed_++;
  last_type_ = type_;
  last_term_ = term_;
  step_ = Step::kPreamble;
  unit_got_ = 0;
  type_ = header_len_ = pos_ = term_ = n_entries_ = payload_ = payload_left_ = conf_len_ = 0;
}

RaftMessageGuard::Result RaftMessageGuard::Preamble() {
  type_ = Le(unit_, 8);
  header_len_ = Le(unit_ + 8, 8);
  const uint64_t len = header_len_;
  bool fits = false;
  switch (type_) {
    case kAppend: fits = len >= kAppendFixed && len <= kAppendFixed + kUnused + 16 * limits_.max_entries; break;
    case kAppendResult: fits = len == 24; break;
    case kVote: fits = len == 32 || len == 40; break;
    case kVoteResult: fits = len == 16 || len == 24; break;
    case kSnapshot: fits = len >= kSnapshotFixed + 9 && len <= kSnapshotFixed + kUnused + kMaxConfBytes; break;
    case kTimeoutNow: fits = len == 24; break;
    default:
      std::snprintf(what_buf_, sizeof what_buf_, "an unknown message type %llu",
                    static_cast<unsigned long long>(type_));
      what_ = what_buf_;
      return Result::kBad;
  }
  if (!fits) {
    std::snprintf(what_buf_, sizeof what_buf_, "%s header of %llu bytes, which does not fit its type%s",
                  TypeName(type_), static_cast<unsigned long long>(len),
                  type_ == kAppend && len > kAppendFixed ? " (or over max_entries)" : "");
    what_ = what_buf_;
    return Result::kBad;
  }
  step_ = Step::kHeader;
  return Result::kOk;
}

size_t RaftMessageGuard::NextUnit() const {
  if (pos_ < 8) return 8;  // the term: every type's first field
  if (type_ == kAppend) {
    if (pos_ < kAppendFixed) return 8;
    if (pos_ < kAppendFixed + 16 * n_entries_) return 16;
  } else if (type_ == kSnapshot) {
    if (pos_ < kSnapshotFixed - 8) return 8;
    if (pos_ < kSnapshotFixed - 8 + conf_len_) return 0;  // the configuration: copied aside, not a unit
    if (pos_ < kSnapshotFixed + conf_len_) return 8;
  }
  return 0;
}

RaftMessageGuard::Result RaftMessageGuard::HeaderUnit() {
  const uint64_t field_at = pos_ - unit_got_;
  const uint64_t v = Le(unit_, 8);
  char msg[128];
  if (field_at == 0) {
    term_ = v;
    if (term_ > kMaxTerm) {
      std::snprintf(msg, sizeof msg, "a term of %llu (over 2^62: no election gets there, and it would wrap)",
                    static_cast<unsigned long long>(term_));
      return Bad(msg);
    }
    return Result::kOk;
  }
  if (type_ == kAppend && field_at == kAppendFixed - 8) {
    n_entries_ = v;
    if (n_entries_ > limits_.max_entries ||
        !(kAppendFixed + 16 * n_entries_ <= header_len_ && header_len_ <= kAppendFixed + kUnused + 16 * n_entries_)) {
      std::snprintf(msg, sizeof msg, "an append of %llu entries in a header of %llu bytes (max_entries %llu)",
                    static_cast<unsigned long long>(n_entries_), static_cast<unsigned long long>(header_len_),
                    static_cast<unsigned long long>(limits_.max_entries));
      return Bad(msg);
    }
    return Result::kOk;
  }
  if (type_ == kAppend && field_at >= kAppendFixed) {  // an entry: term, type, 3 unused, length (u32)
    const uint64_t entry_type = unit_[8], len = Le(unit_ + 12, 4);
    if (entry_type < kEntryCommand || entry_type > kEntryChange) return Bad("an append with an unknown entry type");
    if (len == 0 || len % 8 != 0 || len > limits_.max_entry_bytes) {
      std::snprintf(msg, sizeof msg, "an entry of %llu bytes (not a multiple of 8, or over %llu)",
                    static_cast<unsigned long long>(len), static_cast<unsigned long long>(limits_.max_entry_bytes));
      return Bad(msg);
    }
    payload_ += len;
    if (payload_ > limits_.max_append_bytes) {
      std::snprintf(msg, sizeof msg, "an append of more than %llu bytes (max_append_bytes)",
                    static_cast<unsigned long long>(limits_.max_append_bytes));
      return Bad(msg);
    }
    return Result::kOk;
  }
  if (type_ == kSnapshot && field_at == kConfLenAt) {
    conf_len_ = v;
    if (conf_len_ < 9 || conf_len_ > kMaxConfBytes || header_len_ < kSnapshotFixed + conf_len_ ||
        header_len_ > kSnapshotFixed + kUnused + conf_len_)
      return Bad("a snapshot whose configuration length does not match its header");
    return Result::kOk;
  }
  if (type_ == kSnapshot && field_at == kSnapshotFixed - 8 + conf_len_) {
    if (v == 0 || v > limits_.max_snapshot_bytes) {
      std::snprintf(msg, sizeof msg, "a snapshot of %llu bytes (empty, or over max_snapshot_bytes %llu)",
                    static_cast<unsigned long long>(v), static_cast<unsigned long long>(limits_.max_snapshot_bytes));
      return Bad(msg);
    }
    payload_ = v;
  }
  return Result::kOk;
}

RaftMessageGuard::Result RaftMessageGuard::Feed(const unsigned char* data, size_t n) {
  size_t at = 0;
  while (at < n) {
    if (step_ == Step::kPreamble) {
      size_t take = std::min(n - at, 16 - unit_got_);
      std::memcpy(unit_ + unit_got_, data + at, take);
      unit_got_ += take;
      at += take;
      if (unit_got_ < 16) break;
      unit_got_ = 0;
      if (Preamble() == Result::kBad) return Result::kBad;
      continue;
    }
    if (step_ == Step::kPayload) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(n - at, payload_left_));
      at += take;
      payload_left_ -= take;
      if (payload_left_ == 0) EndOfMessage();
      continue;
    }
    // The header: gather its next field, copy the configuration aside, or skip.
    const size_t unit = NextUnit();
    size_t take;
    if (unit > 0) {
      take = std::min(n - at, unit - unit_got_);
      std::memcpy(unit_ + unit_got_, data + at, take);
      unit_got_ += take;
    } else if (type_ == kSnapshot && pos_ >= kSnapshotFixed - 8 && pos_ < kSnapshotFixed - 8 + conf_len_) {
      const uint64_t conf_at = pos_ - (kSnapshotFixed - 8);
      take = static_cast<size_t>(std::min<uint64_t>(n - at, conf_len_ - conf_at));
      std::memcpy(conf_ + conf_at, data + at, take);
    } else {
      take = static_cast<size_t>(std::min<uint64_t>(n - at, header_len_ - pos_));
    }
    at += take;
    pos_ += take;
    if (unit > 0 && unit_got_ == unit) {
      if (HeaderUnit() == Result::kBad) return Result::kBad;
      unit_got_ = 0;
    }
    if (type_ == kSnapshot && conf_len_ > 0 && pos_ == kSnapshotFixed - 8 + conf_len_ && unit == 0 &&
        !ConfValid(conf_, static_cast<size_t>(conf_len_)))
      return Bad("a snapshot with a malformed configuration");
    if (pos_ == header_len_) {
      if (payload_ == 0) {
        EndOfMessage();
      } else {
        step_ = Step::kPayload;
        payload_left_ = payload_;
      }
    }
  }
  return Result::kOk;
}

}  // namespace tailcut
