// What tailcut checks of a member's libraft messages before libraft reads
// them (scheduler/server/replicas/raft_message_guard.h): libraft 0.15's own
// messages pass however the stream is split; each malformed or oversized
// one is refused, with what is wrong, as soon as the bytes that show it
// arrive (before libraft would allocate what it claims).
#include "raft_message_guard.h"

#include "replica_fixture.h"  // libraft's wire format

namespace tailcut::replica_test {
namespace {

constexpr uint64_t kAppend = 1, kAppendResult = 2, kVote = 3, kVoteResult = 4, kSnapshot = 5, kTimeoutNow = 6;

RaftMessageLimits Limits() {
  RaftMessageLimits l;
  l.max_entries = 8;
  l.max_entry_bytes = 1024;
  l.max_append_bytes = 2048;
  l.max_snapshot_bytes = 1 << 20;
  return l;
}

// Feeds `bytes` in pieces of `piece` bytes; the guard's verdict on the first bad piece.
RaftMessageGuard::Result Feed(RaftMessageGuard* g, const std::string& bytes, size_t piece) {
  for (size_t at = 0; at < bytes.size(); at += piece) {
    size_t n = std::min(piece, bytes.size() - at);
    if (g->Feed(reinterpret_cast<const unsigned char*>(bytes.data() + at), n) == RaftMessageGuard::Result::kBad)
      return RaftMessageGuard::Result::kBad;
  }
  return RaftMessageGuard::Result::kOk;
}

// What the guard says of `bytes`, fed whole; "" when it passes them.
std::string Refusal(const std::string& bytes, RaftMessageLimits limits = Limits()) {
  RaftMessageGuard g;
  g.Init(limits);
  return Feed(&g, bytes, bytes.size()) == RaftMessageGuard::Result::kBad ? g.what() : "";
}

TEST_CASE("libraft's own messages pass the guard, however the stream is split") {
  const std::string conf = Conf({{1, "127.0.0.1:7001"}, {2, "127.0.0.1:7002"}, {3, "[::1]:7003"}});
  const std::string stream =
      Message(kAppend, AppendHeader(7, 10, {16, 8})) + std::string(24, 'e') +  // two entries
      Message(kAppend, AppendHeader(7, 12, {})) +                              // a heartbeat
      Message(kAppendResult, U64(7) + U64(0) + U64(12)) +
      Message(kVote, U64(8) + U64(2) + U64(12) + U64(7) + U64(2)) +  // a pre-vote
      Message(kVote, U64(8) + U64(2) + U64(12) + U64(7)) +           // libraft's first vote format
      Message(kVoteResult, U64(8) + U64(1) + U64(0)) + Message(kVoteResult, U64(8) + U64(1)) +
      Message(kTimeoutNow, U64(8) + U64(12) + U64(7)) + Message(kSnapshot, SnapshotHeader(9, conf, 40)) +
      std::string(40, 's') +
      Message(kSnapshot, U64(9) + U64(100) + U64(9) + U64(1) + U64(conf.size()) + conf + U64(8)) + std::string(8, 's') +
      Message(kAppend, AppendHeader(9, 100, {8}, 2 /* RAFT_BARRIER */)) + std::string(8, 'b');
  for (size_t piece : {stream.size(), size_t{1}, size_t{7}, size_t{16}, size_t{100}}) {
    CAPTURE(piece);
    RaftMessageGuard g;
    g.Init(Limits());
    REQUIRE(Feed(&g, stream, piece) == RaftMessageGuard::Result::kOk);
    CHECK(g.completed() == 11);
    CHECK(g.last_type() == kAppend);
    CHECK(g.last_term() == 9);
  }
  // The term of the message being read is known once its first 8 header bytes are.
  RaftMessageGuard g;
  g.Init(Limits());
  std::string vote = Message(kVote, U64(1000000) + U64(2) + U64(12) + U64(7) + U64(0));
  REQUIRE(Feed(&g, vote.substr(0, 24), 24) == RaftMessageGuard::Result::kOk);
  CHECK(g.type() == kVote);
  CHECK(g.term() == 1000000);
  CHECK(g.completed() == 0);
}

TEST_CASE("a malformed or oversized message is refused, saying what is wrong") {
  const std::string conf = Conf({{1, "127.0.0.1:7001"}});
  struct Case {
    std::string bytes, says;
  };
  for (const Case& c : std::vector<Case>{
           {U64(255) + U64(16), "an unknown message type 255"},
           {U64(0) + U64(16), "an unknown message type 0"},
           {U64(kAppend) + U64(uint64_t{1} << 40), "an append header of 1099511627776 bytes, which does not fit"},
           {U64(kAppend) + U64(32), "an append header of 32 bytes"},
           {Message(kVote, U64(8)), "a vote request header of 8 bytes, which does not fit its type"},
           {Message(kVoteResult, U64(8) + U64(1) + U64(0) + U64(0)), "a vote result header of 32 bytes"},
           {Message(kAppendResult, U64(8) + U64(1)), "an append result header of 16 bytes"},
           {Message(kTimeoutNow, U64(8)), "a timeout-now header of 8 bytes"},
           {Message(kAppend, U64(7) + U64(1) + U64(7) + U64(1) + U64(5) + U64(0)), "an append of 5 entries"},
           {Message(kAppend, AppendHeader(7, 1, {12})), "an entry of 12 bytes (not a multiple of 8, or over 1024)"},
           {Message(kAppend, AppendHeader(7, 1, {0})), "an entry of 0 bytes"},
           {Message(kAppend, AppendHeader(7, 1, {1032})), "an entry of 1032 bytes"},
           {Message(kAppend, AppendHeader(7, 1, {1024, 1024, 8})), "an append of more than 2048 bytes"},
           {Message(kAppend, AppendHeader(7, 1, {8}, 9)), "an append with an unknown entry type"},
           {Message(kSnapshot, SnapshotHeader(9, conf, 0)), "a snapshot of 0 bytes"},
           {Message(kSnapshot, SnapshotHeader(9, conf, uint64_t{1} << 30)),
            "a snapshot of 1073741824 bytes (empty, or over max_snapshot_bytes 1048576)"},
           {Message(kSnapshot, U64(9) + U64(100) + U64(9) + U64(1) + U64(8) + U64(0) + U64(8)),
            "a snapshot header of 56 bytes"},  // a configuration shorter than any
           {Message(kSnapshot, SnapshotHeader(9, conf, 8) + U64(0)), "configuration length does not match"},
           {Message(kSnapshot,
                    SnapshotHeader(9, std::string(1, '\1') + U64(uint64_t{1} << 40) + std::string(7, '\0'), 8)),
            "a snapshot with a malformed configuration"},
           {Message(kSnapshot, SnapshotHeader(9, std::string(1, '\1') + U64(1) + U64(1) + std::string(8, 'a'), 8)),
            "a snapshot with a malformed configuration"},  // an unterminated address
           {Message(kSnapshot, SnapshotHeader(9, std::string(1, '\2') + std::string(15, 0), 8)),
            "a snapshot with a malformed configuration"},  // another format
       }) {
    CAPTURE(c.says);
    CHECK(Refusal(c.bytes).find(c.says) != std::string::npos);
  }
  // The bad length is refused with its preamble, before any header byte;
  // an entry over the bounds with its header, before any payload byte.
  RaftMessageGuard g;
  g.Init(Limits());
  CHECK(Feed(&g, U64(kAppend) + U64(uint64_t{1} << 30), 16) == RaftMessageGuard::Result::kBad);
  CHECK(Refusal(Message(kAppend, AppendHeader(7, 1, {1u << 31}))).find("an entry of 2147483648 bytes") == 0);
  // Bounds are the caller's: a larger max_entries takes a larger append.
  RaftMessageLimits wide = Limits();
  wide.max_entries = 64;
  std::vector<uint32_t> many(20, 8);
  CHECK(Refusal(Message(kAppend, AppendHeader(7, 1, many)), wide).empty());
  CHECK(Refusal(Message(kAppend, AppendHeader(7, 1, many))).find("does not fit its type (or over max_entries)") !=
        std::string::npos);
}

TEST_CASE("a term no election reaches is refused: adopted, it would wrap at the next election") {
  const uint64_t top = ~uint64_t{0};
  for (uint64_t term : {top, top - 1, (uint64_t{1} << 62) + 1}) {
    CAPTURE(term);
    CHECK(Refusal(Message(kVote, U64(term) + U64(2) + U64(12) + U64(7) + U64(0)))
              .find("a term of " + std::to_string(term)) == 0);
    CHECK(Refusal(Message(kAppend, AppendHeader(term, 10, {8})) + std::string(8, 'e')).find("a term of") == 0);
    CHECK(Refusal(Message(kAppendResult, U64(term) + U64(0) + U64(12))).find("a term of") == 0);
  }
  // Refused as soon as its 8 bytes are in, before the rest of the header.
  RaftMessageGuard g;
  g.Init(Limits());
  CHECK(Feed(&g, U64(kVote) + U64(40) + U64(top), 24) == RaftMessageGuard::Result::kBad);
  // 2^62 is still a term (no group gets there: an election a millisecond for 146 million years).
  CHECK(Refusal(Message(kVote, U64(uint64_t{1} << 62) + U64(2) + U64(12) + U64(7) + U64(0))).empty());
}

}  // namespace
}  // namespace tailcut::replica_test
