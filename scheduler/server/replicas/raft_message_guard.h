// What tailcut checks of every libraft message a keyed replica sends,
// before libraft reads it (docs/RELIABILITY.md, "The key is the trust
// boundary"). libraft 0.15 (src/uv_encoding.c, src/uv_recv.c) reads a message
// as a preamble (type u64, header length u64, little-endian), a header
// whose fields depend on the type, and a payload (an append's entries, a
// snapshot's data) whose length the header claims; it allocates each length
// as soon as it has read it, and decodes a header's fields without checking
// its length. This parser walks the same stream byte for byte and says
// what is wrong before libraft allocates or decodes it: an unknown type, a
// header length that does not fit the type, an append's entry count or an
// entry, payload or snapshot longer than the bounds, a malformed snapshot
// configuration, a term over 2^62 (one Raft adopted would wrap).
//
// Trivially destructible, with no heap of its own: it lives in the same
// allocation as the connection's libuv handle, which libraft frees.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tailcut {

struct RaftMessageLimits {
  uint64_t max_entries = 0;         // entries in one append
  uint64_t max_entry_bytes = 0;     // one entry, its padding included
  uint64_t max_append_bytes = 0;    // an append's entries together
  uint64_t max_snapshot_bytes = 0;  // a snapshot's data
};

class RaftMessageGuard {
 public:
  enum class Result { kOk, kBad };

  void Init(const RaftMessageLimits& limits);
  // The next `n` bytes of the stream. kBad: what() says what is wrong, and
  // the connection must be closed (the guard reads nothing more).
  Result Feed(const unsigned char* data, size_t n);
  const char* what() const { return what_; }

  // Messages complete so far, and the last one's type and term (every
  // libraft message's header starts with the sender's term).
  uint64_t completed() const { return completed_; }
  uint64_t last_type() const { return last_type_; }
  uint64_t last_term() const { return last_term_; }
  // The message being read: its type and term once its header has them (0 before).
  uint64_t type() const { return type_; }
  uint64_t term() const { return term_; }

  static constexpr size_t kMaxConfBytes = 4096;  // a snapshot's configuration: 16 voters with long addresses

 private:
  enum class Step { kPreamble, kHeader, kPayload };
  Result Bad(const char* what);
  Result Preamble();
  Result HeaderUnit();
  size_t NextUnit() const;  // bytes of the next header field to gather; 0: skip to the header's end
  void EndOfMessage();

  RaftMessageLimits limits_{};
  Step step_ = Step::kPreamble;
  unsigned char unit_[16]{};
  size_t unit_got_ = 0;
  uint64_t type_ = 0, header_len_ = 0, pos_ = 0;  // pos_: header bytes read
  uint64_t term_ = 0, n_entries_ = 0, payload_ = 0, payload_left_ = 0, conf_len_ = 0;
  unsigned char conf_[kMaxConfBytes]{};
  uint64_t completed_ = 0, last_type_ = 0, last_term_ = 0;
  const char* what_ = "";
  char what_buf_[160]{};
};

}  // namespace tailcut
