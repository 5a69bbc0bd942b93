#include "hollow.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <deque>
#include <mutex>
#include <queue>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "tailcut/wire/executor_session.h"

namespace tailcut::swarm {
namespace {

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The `ms=` value of a task's args ("ms=20" or "ms=20,..."), 0 without one.
double ArgMs(const std::string& args) {
  auto pos = args.find("ms=");
  if (pos == std::string::npos || (pos > 0 && args[pos - 1] != ',' && args[pos - 1] != ' ')) return 0;
  return std::strtod(args.c_str() + pos + 3, nullptr);
}

// Register retries back off from 2 s to 32 s: a scheduler that takes a
// while to answer thousands of Registers must not get each again, since a
// second Register re-registers the executor (dropping what it was given
// after the first).
constexpr double kRegisterRetryS = 2.0, kRegisterRetryMaxS = 32.0;

}  // namespace

// One hollow executor: the protocol is ExecutorSession's (wire), the same
// as the executor daemon's; what it holds and "runs" is this file's.
struct HollowGroup::Member {
  std::unique_ptr<ExecutorSession> session;
  uint64_t socket = 0;  // the session's socket watched in epoll (a move to another replica opens a new one)
  uint32_t index = 0;
  bool slow = false;
  bool registered = false;  // as last counted in stats
  bool touched = false;     // in Impl::touched
  double next_timer = 0;    // the session's, as queued in `due`
  uint32_t running = 0;
  struct Held {
    uint64_t job = 0;
    uint32_t task = 0;
    double run_s = 0;
    double started = -1;  // -1 while queued
  };
  std::unordered_map<uint64_t, Held> held;
  std::deque<uint64_t> queue;  // assigned, waiting for a slot
};

struct HollowGroup::Impl {
  const HollowOptions o;
  std::vector<Member> members;
  std::mt19937_64 rng;
  int epoll_fd = -1;
  // (time, member, attempt): the running attempts' finishes, earliest
  // first; attempt 0: the member's session timer (Tick), stale when it no
  // longer equals the member's next_timer. Nothing here scans the group.
  using Due = std::tuple<double, uint32_t, uint64_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due;
  std::vector<uint32_t> touched;  // members to Service this turn, once each
  mutable std::mutex stats_mu;  // Stats() is read from the driver's thread
  HollowStats stats;

  Impl(const HollowOptions& opt, uint64_t seed) : o(opt), rng(seed) {}
  ~Impl() {
    if (epoll_fd >= 0) close(epoll_fd);
  }

  ExecutorSession::Hooks HooksFor(Member& m) {
    ExecutorSession::Hooks h;
    h.offer = [this, &m](wire::Register* r) {
      r->set_cpu_slots(o.slots);
      r->set_memory_mb(o.memory_mb);
      for (uint32_t g = 0; g < o.gpus; ++g) {
        wire::GpuInfo* gpu = r->add_gpus();
        gpu->set_index(g);
        gpu->set_name("hollow GPU");
        gpu->set_fake(true);
      }
      for (const std::string& k : o.kernels) r->add_kernels(k);
      for (auto& [id, held] : m.held) {
        wire::HeldAttempt* a = r->add_running();
        a->set_attempt_id(id);
        a->set_job_id(held.job);
        a->set_task_index(held.task);
        a->set_started(held.started >= 0);
      }
      return true;
    };
    h.work = [this, &m](wire::Work* w) {
      ++stats.received;
      OnWork(m, *w, NowS());
    };
    h.report = [this, &m](wire::Report* r, bool heartbeat) {
      r->mutable_signals()->set_load(static_cast<double>(m.running) / o.slots);
      ++stats.reports;
      if (heartbeat && r->results_size() == 0 && r->started_size() == 0) ++stats.heartbeats;
    };
    h.registered = [this](const wire::RegisterAck& ack, bool) {
      ++stats.received;
      ++stats.registrations;
      stats.max_heartbeat_ms = std::max(stats.max_heartbeat_ms, ack.heartbeat_interval_ms());
    };
    return h;
  }

  void Start(Member& m, uint64_t id, double now) {
    Member::Held& h = m.held[id];
    h.started = now;
    ++m.running;
    m.session->AddStarted(id);
    due.emplace(now + h.run_s, m.index, id);
  }

  void Finish(Member& m, uint64_t id, Member::Held& h, wire::AttemptResult::Outcome outcome, double now) {
    wire::AttemptResult res;
    res.set_attempt_id(id);
    res.set_outcome(outcome);
    res.set_job_id(h.job);
    res.set_task_index(h.task);
    res.set_run_s(h.started >= 0 ? now - h.started : 0);
    m.session->AddResult(&res);
    bool was_running = h.started >= 0;
    m.held.erase(id);
    if (!was_running) return;
    --m.running;
    while (m.running < o.slots && !m.queue.empty()) {
      uint64_t next = m.queue.front();
      m.queue.pop_front();
      if (m.held.count(next)) Start(m, next, now);
    }
  }

  void OnWork(Member& m, const wire::Work& w, double now) {
    std::lognormal_distribution<double> jitter(0, o.jitter_sigma);
    for (const wire::Assignment& a : w.assign()) {
      Member::Held h;
      h.job = a.job_id();
      h.task = a.task_index();
      h.run_s = ArgMs(a.args()) / 1000.0 * (o.jitter_sigma > 0 ? jitter(rng) : 1.0) *
                (m.slow ? o.fail_slow_factor : 1.0);
      m.held[a.attempt_id()] = h;
      ++stats.attempts;
      if (m.running < o.slots)
        Start(m, a.attempt_id(), now);
      else
        m.queue.push_back(a.attempt_id());
    }
    for (uint64_t id : w.cancel()) {
      auto it = m.held.find(id);
      if (it == m.held.end()) continue;
      ++stats.cancelled;
      Finish(m, id, it->second, wire::AttemptResult::CANCELLED, now);
    }
  }

  void Touch(Member& m) {
    if (!m.touched) touched.push_back(m.index);
    m.touched = true;
  }

  // `m`'s socket in epoll (a closed one left it by itself; its number may
  // be the new one's).
  void Watch(Member& m) {
    m.socket = m.session->sockets_opened();
    const int fd = m.session->socket().get(zmq::sockopt::fd);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = m.index;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0 &&
        (errno != EEXIST || epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &ev) != 0))
      throw std::runtime_error("epoll_ctl failed");
  }

  // Everything pending on `m`'s socket, then its outbox out as one Report.
  // ZMQ_FD (polled for reading only: it is an eventfd, always writable)
  // says that the socket's state may have changed, in or out (a Register
  // that found no connection waits for POLLOUT), and any send or receive
  // may clear it, so ZMQ_EVENTS is asked until it has nothing.
  void Service(Member& m, double now) {
    ExecutorSession& s = *m.session;
    m.touched = false;
    try {
      for (int turn = 0; turn < 64; ++turn) {
        int ev = s.socket().get(zmq::sockopt::events);
        if (ev & ZMQ_POLLIN) s.OnReadable(now);
        if ((ev & ZMQ_POLLOUT) && s.want_out()) s.OnWritable(now);
        s.Flush();
        if (!(ev & ZMQ_POLLIN)) break;
      }
    } catch (const zmq::error_t& e) {  // EINTR: a signal; Run checks `stop`
      if (e.num() != EINTR) throw;
    }
    if (s.sockets_opened() != m.socket) Watch(m);
    if (s.registered() != m.registered) {
      m.registered = s.registered();
      m.registered ? ++stats.registered : --stats.registered;
    }
    if (double t = s.NextTimer(); t != m.next_timer) {
      m.next_timer = t;
      due.emplace(t, m.index, 0);
    }
  }
};

HollowGroup::HollowGroup(zmq::context_t& ctx, const HollowOptions& o, uint32_t first_index, uint32_t count)
    : impl_(std::make_unique<Impl>(o, o.seed * 1000003 + first_index)) {
  Impl& s = *impl_;
  s.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (s.epoll_fd < 0) throw std::runtime_error("epoll_create1 failed");
  s.members.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    Member& m = s.members[i];
    m.index = i;
    uint32_t index = first_index + i;
    m.slow = o.fail_slow_every && index % o.fail_slow_every == 0;
    SessionOptions so;
    so.endpoint = o.scheduler;
    so.name = o.name_prefix + "-" + std::to_string(index);
    so.register_retry_s = kRegisterRetryS;
    so.max_backoff_s = kRegisterRetryMaxS;
    so.keys = o.keys;
    so.watch_handshake = !o.keys.key_file.empty();
    m.session = std::make_unique<ExecutorSession>(std::move(so), ctx, s.HooksFor(m));
    if (Status st = m.session->Connect(); !st.ok()) throw std::runtime_error(st.message());
    s.Watch(m);
  }
}

HollowGroup::~HollowGroup() = default;

void HollowGroup::Run(const std::atomic<bool>& stop) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.stats_mu);
    double now = NowS();
    for (Member& m : s.members) {
      m.session->Tick(now);  // the first Register
      s.Service(m, now);
    }
  }
  std::vector<epoll_event> ready(1024);
  while (!stop.load(std::memory_order_relaxed)) {
    double now = NowS();
    // Sleep until the next timer, at most 100 ms (`stop` is checked then).
    double wait = 0.1;
    if (!s.due.empty()) wait = std::clamp(std::get<0>(s.due.top()) - now, 0.0, wait);
    int n =
        epoll_wait(s.epoll_fd, ready.data(), static_cast<int>(ready.size()), static_cast<int>(std::ceil(wait * 1000)));
    now = NowS();
    std::lock_guard lock(s.stats_mu);
    for (int i = 0; i < n; ++i) s.Service(s.members[ready[i].data.u32], now);
    // Then the finishes and timers due, each member's results out in one
    // Report (Touch) rather than one per attempt.
    while (!s.due.empty() && std::get<0>(s.due.top()) <= now) {
      auto [at, i, id] = s.due.top();
      s.due.pop();
      Member& m = s.members[i];
      if (id == 0) {                       // the session's timer
        if (at != m.next_timer) continue;  // moved since
        m.next_timer = -1;
        m.session->Tick(now);
      } else {
        auto it = m.held.find(id);
        if (it == m.held.end() || it->second.started < 0) continue;  // cancelled
        ++s.stats.results;
        s.Finish(m, id, it->second, wire::AttemptResult::OK, now);
      }
      s.Touch(m);
    }
    for (uint32_t i : s.touched) s.Service(s.members[i], now);
    s.touched.clear();
  }
  for (Member& m : s.members) m.session->Goodbye("swarm stopping", 200);
}

HollowStats HollowGroup::Stats() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->stats;
}

}  // namespace tailcut::swarm
