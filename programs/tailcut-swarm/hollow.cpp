#include "hollow.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <mutex>
#include <queue>
#include <random>
#include <unordered_map>

#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"

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

struct HollowGroup::Member {
  zmq::socket_t sock;
  std::string name;
  bool slow = false;
  bool registered = false;
  double heartbeat_s = 0.2, lost_s = 2.0;
  double next_heartbeat = 0, last_heard = 0, next_register = 0;
  double register_retry_s = kRegisterRetryS;
  uint32_t running = 0;
  struct Held {
    uint64_t job = 0;
    uint32_t task = 0;
    double run_s = 0;
    double started = -1;  // -1 while queued
  };
  std::unordered_map<uint64_t, Held> held;
  std::deque<uint64_t> queue;  // assigned, waiting for a slot
  wire::ExecutorMessage out;   // the Report being filled
  bool dirty = false;
};

struct HollowGroup::Impl {
  const HollowOptions o;
  std::vector<Member> members;
  std::mt19937_64 rng;
  // (finish time, member, attempt): the running attempts, earliest first.
  using Due = std::tuple<double, uint32_t, uint64_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due;
  mutable std::mutex stats_mu;  // Stats() is read from the driver's thread
  HollowStats stats;

  Impl(const HollowOptions& opt, uint64_t seed) : o(opt), rng(seed) {}

  using Report = wire::Report;
  Report& R(Member& m) {
    if (!m.out.has_report()) {
      m.out.set_version(kProtocolVersion);
      m.out.mutable_report();
    }
    m.dirty = true;
    return *m.out.mutable_report();
  }

  void SendRegister(Member& m, double now) {
    wire::ExecutorMessage msg;
    msg.set_version(kProtocolVersion);
    wire::Register* r = msg.mutable_register_();
    r->set_name(m.name);
    r->set_host("swarm");
    r->set_cpu_slots(o.slots);
    r->set_memory_mb(o.memory_mb);
    for (uint32_t g = 0; g < o.gpus; ++g) {
      wire::GpuInfo* gpu = r->add_gpus();
      gpu->set_index(g);
      gpu->set_name("hollow GPU");
      gpu->set_fake(true);
    }
    for (const std::string& k : o.kernels) r->add_kernels(k);
    // What it holds goes with the Register (docs/PROTOCOL.md); results not
    // yet delivered too.
    for (auto& [id, h] : m.held) {
      wire::HeldAttempt* a = r->add_running();
      a->set_attempt_id(id);
      a->set_job_id(h.job);
      a->set_task_index(h.task);
      a->set_started(h.started >= 0);
    }
    if (m.out.has_report())
      for (const wire::AttemptResult& res : m.out.report().results()) *r->add_undelivered() = res;
    if (m.sock.send(ToFrame(msg), zmq::send_flags::dontwait)) {
      m.out.Clear();
      m.dirty = false;
    }
    m.next_register = now + m.register_retry_s;
    m.register_retry_s = std::min(2 * m.register_retry_s, kRegisterRetryMaxS);
  }

  void Start(Member& m, uint32_t index, uint64_t id, double now) {
    Member::Held& h = m.held[id];
    h.started = now;
    ++m.running;
    R(m).add_started()->set_attempt_id(id);
    due.emplace(now + h.run_s, index, id);
  }

  void Finish(Member& m, uint32_t index, uint64_t id, Member::Held& h, wire::AttemptResult::Outcome outcome,
              double now) {
    wire::AttemptResult* res = R(m).add_results();
    res->set_attempt_id(id);
    res->set_outcome(outcome);
    res->set_job_id(h.job);
    res->set_task_index(h.task);
    res->set_run_s(h.started >= 0 ? now - h.started : 0);
    bool was_running = h.started >= 0;
    m.held.erase(id);
    if (was_running) {
      --m.running;
      while (m.running < o.slots && !m.queue.empty()) {
        uint64_t next = m.queue.front();
        m.queue.pop_front();
        if (m.held.count(next)) Start(m, index, next, now);
      }
    }
  }

  void OnWork(Member& m, uint32_t index, const wire::Work& w, double now) {
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
        Start(m, index, a.attempt_id(), now);
      else
        m.queue.push_back(a.attempt_id());
    }
    for (uint64_t id : w.cancel()) {
      auto it = m.held.find(id);
      if (it == m.held.end()) continue;
      ++stats.cancelled;
      Finish(m, index, id, it->second, wire::AttemptResult::CANCELLED, now);
    }
  }

  void Handle(Member& m, uint32_t index, const zmq::message_t& frame, double now) {
    wire::SchedulerToExecutor in;
    if (!FromFrame(frame, &in) || in.version() != kProtocolVersion) return;
    ++stats.received;
    m.last_heard = now;
    switch (in.body_case()) {
      case wire::SchedulerToExecutor::kRegistered: {
        const wire::RegisterAck& ack = in.registered();
        if (!m.registered) ++stats.registered;
        m.registered = true;
        m.register_retry_s = kRegisterRetryS;
        ++stats.registrations;
        if (ack.heartbeat_interval_ms()) m.heartbeat_s = ack.heartbeat_interval_ms() / 1000.0;
        m.lost_s = ack.lost_after_ms() ? ack.lost_after_ms() / 1000.0 : 10 * m.heartbeat_s;
        stats.max_heartbeat_ms = std::max(stats.max_heartbeat_ms, ack.heartbeat_interval_ms());
        // Spread the fleet's heartbeats over the interval.
        m.next_heartbeat = now + m.heartbeat_s * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
        break;
      }
      case wire::SchedulerToExecutor::kWork: OnWork(m, index, in.work(), now); break;
      case wire::SchedulerToExecutor::kError:
        if (in.error().code() == wire::Error::UNKNOWN_EXECUTOR && m.registered) Lost(m, now);
        break;
      default: break;
    }
  }

  void Lost(Member& m, double now) {
    m.registered = false;
    --stats.registered;
    SendRegister(m, now);
  }

  // One Report per member per turn, whatever it carries; an empty one when
  // the interval passed with nothing else sent (any Report is a heartbeat).
  void Flush(Member& m, double now) {
    if (!m.registered) {
      if (now >= m.next_register) SendRegister(m, now);
      return;
    }
    if (now - m.last_heard > m.lost_s) return Lost(m, now);
    bool beat = now >= m.next_heartbeat;
    if (!m.dirty && !beat) return;
    Report& r = R(m);
    r.mutable_signals()->set_load(static_cast<double>(m.running) / o.slots);
    if (!m.sock.send(ToFrame(m.out), zmq::send_flags::dontwait)) return;  // kept for the next turn
    ++stats.reports;
    if (beat && r.results_size() == 0 && r.started_size() == 0) ++stats.heartbeats;
    m.out.Clear();
    m.dirty = false;
    m.next_heartbeat = now + m.heartbeat_s;
  }
};

HollowGroup::HollowGroup(zmq::context_t& ctx, const HollowOptions& o, uint32_t first_index, uint32_t count)
    : impl_(std::make_unique<Impl>(o, o.seed * 1000003 + first_index)) {
  impl_->members.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    Member& m = impl_->members[i];
    uint32_t index = first_index + i;
    m.name = o.name_prefix + "-" + std::to_string(index);
    m.slow = o.fail_slow_every && index % o.fail_slow_every == 0;
    m.sock = zmq::socket_t(ctx, zmq::socket_type::dealer);
    m.sock.set(zmq::sockopt::routing_id, m.name);
    m.sock.set(zmq::sockopt::sndhwm, 0);
    m.sock.set(zmq::sockopt::rcvhwm, 0);
    m.sock.set(zmq::sockopt::immediate, 1);
    m.sock.set(zmq::sockopt::linger, 200);
    if (Status s = ApplyPeerKeys(m.sock, o.keys); !s.ok()) throw std::runtime_error(s.message());
    m.sock.connect(o.scheduler);
  }
}

HollowGroup::~HollowGroup() = default;

void HollowGroup::Run(const std::atomic<bool>& stop) {
  Impl& s = *impl_;
  std::vector<zmq::pollitem_t> items(s.members.size());
  for (size_t i = 0; i < s.members.size(); ++i) items[i] = {s.members[i].sock.handle(), 0, ZMQ_POLLIN, 0};
  double now = NowS();
  for (Member& m : s.members) s.SendRegister(m, now);
  while (!stop.load(std::memory_order_relaxed)) {
    now = NowS();
    // Sleep until the next finish, at most 20 ms (timers are checked then).
    double wait = 0.02;
    if (!s.due.empty()) wait = std::clamp(std::get<0>(s.due.top()) - now, 0.0, wait);
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(static_cast<long>(wait * 1000)));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;  // a signal: `stop` says whether to go on
    }
    now = NowS();
    std::lock_guard lock(s.stats_mu);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      Member& m = s.members[i];
      zmq::message_t frame;
      while (m.sock.recv(frame, zmq::recv_flags::dontwait)) s.Handle(m, static_cast<uint32_t>(i), frame, now);
    }
    while (!s.due.empty() && std::get<0>(s.due.top()) <= now) {
      auto [at, i, id] = s.due.top();
      s.due.pop();
      Member& m = s.members[i];
      auto it = m.held.find(id);
      if (it == m.held.end() || it->second.started < 0) continue;  // cancelled
      ++s.stats.results;
      s.Finish(m, i, id, it->second, wire::AttemptResult::OK, now);
    }
    for (Member& m : s.members) s.Flush(m, now);
  }
  for (Member& m : s.members) {
    if (!m.registered) continue;
    wire::ExecutorMessage bye;
    bye.set_version(kProtocolVersion);
    bye.mutable_goodbye()->set_reason("swarm stopping");
    (void)m.sock.send(ToFrame(bye), zmq::send_flags::dontwait);
  }
}

HollowStats HollowGroup::Stats() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->stats;
}

}  // namespace tailcut::swarm
