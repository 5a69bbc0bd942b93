// Three (or more) replicas in one process, on loopback ports, each with its
// own directory and SQLite journal (scheduler/server/replicas/). Shared by
// replica_group_test.cpp and keyed_transport_test.cpp.
#pragma once

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "journal_batch.h"
#include "journal_state_machine.h"
#include "replica_group.h"

namespace tailcut::replica_test {

// A loopback port free right now (the kernel's pick, released again).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t n = sizeof a;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

inline std::string Key(char fill) { return std::string(32, fill); }

// Waits up to `s` seconds for `done`, polling.
inline bool WaitFor(const std::function<bool()>& done, double s = 10) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// libraft's wire format (its uv_encoding.c): little-endian u64s, a message
// is its type, its header's length, the header, then any entries' data.
inline std::string U64(uint64_t v) {
  std::string b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return b;
}
inline std::string Message(uint64_t type, const std::string& header) { return U64(type) + U64(header.size()) + header; }
// An append's header: term, previous index and term, commit index, then
// one header per entry (its term, type, length), then libraft 0.15's 8
// unused bytes (it counts a leader id it does not write).
inline std::string AppendHeader(uint64_t term, uint64_t prev, const std::vector<uint32_t>& entry_lengths,
                                uint8_t entry_type = 1 /* RAFT_COMMAND */) {
  std::string h = U64(term) + U64(prev) + U64(term) + U64(prev) + U64(entry_lengths.size());
  for (uint32_t len : entry_lengths) {
    h += U64(term) + std::string(1, static_cast<char>(entry_type)) + std::string(3, '\0');
    for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  }
  return h + U64(0);
}
// A snapshot's header: term, last index and term, configuration index and
// length, the configuration, the data's length, 8 unused bytes (as an append's).
inline std::string SnapshotHeader(uint64_t term, const std::string& conf, uint64_t data_len) {
  return U64(term) + U64(100) + U64(term) + U64(1) + U64(conf.size()) + conf + U64(data_len) + U64(0);
}
// A configuration as libraft encodes it: format 1, count, then id, address, role each; padded to 8.
inline std::string Conf(const std::vector<std::pair<uint64_t, std::string>>& voters) {
  std::string c(1, '\1');
  c += U64(voters.size());
  for (const auto& [id, address] : voters) c += U64(id) + address + std::string(1, '\0') + std::string(1, '\1');
  c.resize((c.size() + 7) / 8 * 8, '\0');
  return c;
}

// One group commit: job `id` accepted.
inline std::string AcceptEntry(JobId id) {
  JournalBatch b;
  b.JobAccepted(id, "key-" + std::to_string(id), "spec-" + std::to_string(id), 1000.0 + static_cast<double>(id));
  return b.Take();
}

struct Replica {
  ReplicaOptions options;
  std::unique_ptr<JournalStateMachine> machine;
  std::unique_ptr<ReplicaGroup> group;
  std::set<uint64_t> committed, failed;  // tags, from Poll
  std::vector<std::string> refusals;
  std::mutex refusals_mu;

  void Drain() {
    if (!group) return;
    std::vector<ReplicaEvent> events;
    group->Poll(&events);
    for (const ReplicaEvent& e : events) {
      if (e.kind == ReplicaEvent::Kind::kCommitted) committed.insert(e.tag);
      if (e.kind == ReplicaEvent::Kind::kFailed) {
        failed.insert(e.tag);
        UNSCOPED_INFO("proposal " << e.tag << " failed: " << e.status.message());
      }
    }
  }
  size_t refused() {
    std::lock_guard<std::mutex> l(refusals_mu);
    return refusals.size();
  }
};

class Cluster {
 public:
  // n replicas; `keys[i]` is replica i+1's key (default: one shared key).
  explicit Cluster(size_t n, std::vector<std::string> keys = {}) {
    dir_ = std::filesystem::temp_directory_path() /
           ("tailcut-replicas-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    std::vector<ReplicaPeer> peers;
    for (size_t i = 0; i < n; ++i) peers.push_back({i + 1, "127.0.0.1:" + std::to_string(FreePort())});
    for (size_t i = 0; i < n; ++i) {
      auto r = std::make_unique<Replica>();
      ReplicaOptions& o = r->options;
      o.id = i + 1;
      o.peers = peers;
      o.dir = (dir_ / ("r" + std::to_string(i + 1)) / "raft").string();
      o.key = i < keys.size() ? keys[i] : Key('k');
      o.election_timeout_ms = 1000;  // libraft's default: a loaded CI machine keeps its leader
      o.heartbeat_timeout_ms = 100;
      o.handshake_timeout_ms = 1000;
      Replica* raw = r.get();
      o.on_refused = [raw](const std::string& why) {
        std::lock_guard<std::mutex> l(raw->refusals_mu);
        raw->refusals.push_back(why);
      };
      replicas_.push_back(std::move(r));
    }
  }
  ~Cluster() {
    for (auto& r : replicas_) StopReplica(r.get());
    std::filesystem::remove_all(dir_);
  }

  std::string JournalPath(size_t i) const { return (dir_ / ("r" + std::to_string(i + 1)) / "journal.db").string(); }

  void StartAll() {
    for (size_t i = 0; i < replicas_.size(); ++i) Start(i);
  }
  void Start(size_t i) {
    Replica* r = replicas_[i].get();
    std::filesystem::create_directories(std::filesystem::path(JournalPath(i)).parent_path());
    auto m = JournalStateMachine::Open(JournalOptions{JournalPath(i), false});
    REQUIRE(m.ok());
    r->machine = std::move(*m);
    auto g = ReplicaGroup::Start(r->options, r->machine.get());
    REQUIRE(g.ok());
    r->group = std::move(*g);
  }
  // Leaves the group (the machine's "death" in one process); the journal stays.
  void StopReplica(Replica* r) {
    if (r->group) r->group->Stop();
    r->group.reset();
    r->machine.reset();
  }
  void Stop(size_t i) { StopReplica(replicas_[i].get()); }

  Replica& operator[](size_t i) { return *replicas_[i]; }
  size_t size() const { return replicas_.size(); }

  // The one running replica that leads, once exactly one does (-1: none in time).
  int WaitLeader(double s = 10) {
    int leader = -1;
    WaitFor(
        [&] {
          int n = 0;
          for (size_t i = 0; i < replicas_.size(); ++i) {
            if (replicas_[i]->group && replicas_[i]->group->is_leader()) {
              leader = static_cast<int>(i);
              n++;
            }
          }
          return n == 1;
        },
        s);
    return leader;
  }

  // Proposes job ids [first, first+n) on replica i, one entry each, and
  // waits for every result. Returns how many committed.
  size_t Commit(size_t i, JobId first, size_t n, double s = 10) {
    Replica& r = *replicas_[i];
    std::set<uint64_t> tags;
    for (JobId id = first; id < first + n; ++id) {
      if (r.group->Propose(AcceptEntry(id), id).ok()) tags.insert(id);
    }
    WaitFor(
        [&] {
          r.Drain();
          for (uint64_t t : tags)
            if (!r.committed.count(t) && !r.failed.count(t)) return false;
          return true;
        },
        s);
    size_t ok = 0;
    for (uint64_t t : tags) ok += r.committed.count(t);
    return ok;
  }

  // Job ids in replica i's journal (the replica must be stopped).
  std::set<JobId> JobsIn(size_t i) const {
    auto j = Journal::Open(JournalOptions{JournalPath(i), false});
    REQUIRE(j.ok());
    std::vector<JournaledJob> jobs;
    REQUIRE((*j)->Load(&jobs).ok());
    std::set<JobId> ids;
    for (const JournaledJob& job : jobs) ids.insert(job.id);
    return ids;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

inline std::set<JobId> Range(JobId first, JobId last) {
  std::set<JobId> s;
  for (JobId id = first; id <= last; ++id) s.insert(id);
  return s;
}

}  // namespace tailcut::replica_test
