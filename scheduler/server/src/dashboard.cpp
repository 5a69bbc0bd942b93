#include "dashboard.h"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <cstdio>

namespace tailcut::dashboard {

const char* AttemptKindName(AttemptKind k) {
  switch (k) {
    case AttemptKind::kCopy: return "copy";
    case AttemptKind::kRestart: return "restart";
    default: return "first";
  }
}

// Per running job: which tasks were launched (a later non-copy launch is a
// restart), and a reservoir of committed run times for p50/p99.
struct Recorder::JobStats {
  std::vector<bool> launched;
  std::vector<double> samples;
  uint64_t commits = 0, copies_won = 0, restarts = 0;
  uint64_t rng = 0x9e3779b97f4a7c15ULL;  // deterministic: tests see the same reservoir

  bool MarkLaunched(TaskIndex t) {  // true if it was launched before
    if (t >= launched.size()) launched.resize(static_cast<size_t>(t) + 1, false);
    bool before = launched[t];
    launched[t] = true;
    return before;
  }
  void AddSample(double v) {
    ++commits;
    if (samples.size() < kRunSamples) {
      samples.push_back(v);
      return;
    }
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;  // xorshift64
    uint64_t i = rng % commits;
    if (i < kRunSamples) samples[i] = v;
  }
  static double Quantile(std::vector<double> v, double q) {
    if (v.empty()) return -1;
    size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - (q > 0 ? 1 : 0));
    std::nth_element(v.begin(), v.begin() + i, v.end());
    return v[i];
  }
  void Fill(JobView* j) const {
    j->copies_won = copies_won;
    j->restarts = restarts;
    j->run_p50 = Quantile(samples, 0.5);
    j->run_p99 = Quantile(samples, 0.99);
  }
};

Recorder::Recorder(const Clock* clock) : clock_(clock) {}
Recorder::~Recorder() = default;

Recorder::JobStats& Recorder::Stats(JobId job) {
  auto& p = running_[job];
  if (!p) p = std::make_unique<JobStats>();
  return *p;
}

void Recorder::OnAttemptLaunched(const LaunchCmd& l, const std::string&) {
  JobStats& st = Stats(l.job);
  bool before = st.MarkLaunched(l.task);
  AttemptView a;
  a.attempt = l.attempt;
  a.job = l.job;
  a.task = l.task;
  a.executor = l.executor;
  a.kind = l.copy ? AttemptKind::kCopy : before ? AttemptKind::kRestart : AttemptKind::kFirst;
  if (a.kind == AttemptKind::kRestart) st.restarts++;
  a.live = true;
  a.queued = clock_->Now();
  live_[l.attempt] = a;
}

void Recorder::OnAttemptEnded(const AttemptRecord& r) {
  // The core ends every attempt of a job before it reports the job
  // finished, so this never recreates the stats of a finished job.
  JobStats& st = Stats(r.job);
  AttemptView a;
  if (auto it = live_.find(r.attempt); it != live_.end()) {
    a = it->second;
    live_.erase(it);
  } else {  // launched and ended in one turn, or adopted after a restart
    a.attempt = r.attempt;
    a.job = r.job;
    a.task = r.task;
    a.executor = r.executor;
    bool before = st.MarkLaunched(r.task);
    a.kind = r.copy ? AttemptKind::kCopy : before ? AttemptKind::kRestart : AttemptKind::kFirst;
    if (a.kind == AttemptKind::kRestart) st.restarts++;
  }
  a.live = false;
  a.seq = ++seq_;
  a.outcome = r.outcome;
  a.queued = r.queued;
  a.started = r.started;
  a.finished = r.finished;
  a.run_s = r.Duration();
  if (r.outcome == AttemptOutcome::kCommitted) {
    st.AddSample(a.run_s);
    if (r.copy) st.copies_won++;
  }
  ended_.push_back(a);
  if (ended_.size() > kRecentAttempts) ended_.pop_front();
}

void Recorder::OnJobFinished(const JobStatusInfo& job) {
  JobView v;
  v.status = job;
  if (auto it = running_.find(job.id); it != running_.end()) {
    it->second->Fill(&v);
    running_.erase(it);
  }
  finished_.push_front(std::move(v));
  if (finished_.size() > kFinishedJobs) finished_.pop_back();
  latencies_.push_back(std::max(0.0, job.finished - job.submitted));
  if (latencies_.size() > kLatencySamples) latencies_.pop_front();
  jobs_finished_++;
}

State Recorder::Collect(const SchedulerCore& core, Time now) const {
  State s;
  s.now = now;
  std::vector<JobId> ids = core.RunningJobIds();
  std::sort(ids.rbegin(), ids.rend());
  if (ids.size() > kRunningJobsShown) ids.resize(kRunningJobsShown);
  for (JobId id : ids) {
    auto st = core.JobStatus(id);
    if (!st.ok()) continue;
    JobView v;
    v.status = std::move(st).value();
    if (auto it = running_.find(id); it != running_.end()) it->second->Fill(&v);
    s.jobs.push_back(std::move(v));
  }
  s.jobs.insert(s.jobs.end(), finished_.begin(), finished_.end());
  // Bounded: 10,000 rows a refresh would cost the page (and this copy) more
  // than they show. One pass over the fleet, on a scrape only.
  std::vector<ExecutorStatusInfo> fleet = core.Executors();
  s.executors_total = fleet.size();
  auto needs_a_look = [](const ExecutorStatusInfo& e) {
    return e.quarantined || e.health.state != NodeHealth::kHealthy;
  };
  for (const ExecutorStatusInfo& e : fleet) {
    s.total_slots += e.slots;
    s.running_total += e.running;
    s.executors_not_healthy += e.health.state != NodeHealth::kHealthy;
  }
  std::stable_partition(fleet.begin(), fleet.end(), needs_a_look);
  if (fleet.size() > kExecutorsShown) fleet.resize(kExecutorsShown);
  s.executors = std::move(fleet);
  s.owners = TopOwners(core.OwnerShares());
  s.attempts.assign(ended_.begin(), ended_.end());
  std::vector<AttemptView> live;
  live.reserve(live_.size());
  for (const auto& [id, a] : live_) live.push_back(a);
  std::sort(live.begin(), live.end(), [](const AttemptView& a, const AttemptView& b) { return a.attempt > b.attempt; });
  if (live.size() > kRecentAttempts) live.resize(kRecentAttempts);
  s.attempts.insert(s.attempts.end(), live.rbegin(), live.rend());
  s.last_seq = seq_;
  s.latencies.assign(latencies_.begin(), latencies_.end());
  std::sort(s.latencies.begin(), s.latencies.end());
  s.jobs_finished = jobs_finished_;
  return s;
}

// ------------------------------------------------------------- JSON ----

namespace {

// Length of the valid UTF-8 sequence at v[i], 0 if invalid.
size_t Utf8Len(std::string_view v, size_t i) {
  auto c = static_cast<unsigned char>(v[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > v.size()) return 0;
  uint32_t cp = n == 1 ? c : c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    auto d = static_cast<unsigned char>(v[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  // Overlong forms, surrogates and beyond U+10FFFF are invalid too.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
  return n;
}

std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
std::string Num(uint64_t v) { return std::to_string(v); }
std::string Time3(double v) {  // seconds, millisecond resolution is plenty on a page
  return v < 0 ? "null" : Num(std::round(v * 1000) / 1000);
}

// A JSON object written field by field.
class Obj {
 public:
  explicit Obj(std::string* out) : out_(out) { *out_ += '{'; }
  ~Obj() { *out_ += '}'; }
  Obj& Raw(std::string_view key, std::string_view json) {
    if (!first_) *out_ += ',';
    first_ = false;
    *out_ += '"';
    *out_ += key;
    *out_ += "\":";
    *out_ += json;
    return *this;
  }
  Obj& Str(std::string_view key, std::string_view v) { return Raw(key, JsonString(v)); }
  Obj& U(std::string_view key, uint64_t v) { return Raw(key, Num(v)); }
  Obj& D(std::string_view key, double v) { return Raw(key, Num(v)); }
  Obj& B(std::string_view key, bool v) { return Raw(key, v ? "true" : "false"); }

 private:
  std::string* out_;
  bool first_ = true;
};

}  // namespace

std::string JsonString(std::string_view v) {
  std::string out = "\"";
  out.reserve(v.size() + 2);
  for (size_t i = 0; i < v.size();) {
    auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x80) {
      size_t n = Utf8Len(v, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
        continue;
      }
      std::string_view seq = v.substr(i, n);
      // U+2028 and U+2029 end lines in older JavaScript: escape them too.
      if (seq == "\xe2\x80\xa8" || seq == "\xe2\x80\xa9")
        out += seq[2] == '\xa8' ? "\\u2028" : "\\u2029";
      else
        out += seq;
      i += n;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

namespace {

// A JSON array of `items`, each written by `each(item, &out)`.
template <typename Items, typename Each>
std::string Array(const Items& items, Each each) {
  std::string arr = "[";
  for (const auto& item : items) {
    size_t before = arr.size();
    if (arr.size() > 1) arr += ',';
    if (!each(item, &arr)) arr.resize(before);  // skipped
  }
  arr += ']';
  return arr;
}

// {"now": ..., "<key>": [items]}: every list endpoint's shape.
template <typename Items, typename Each>
std::string List(const State& s, std::string_view key, const Items& items, Each each) {
  std::string out;
  {
    Obj root(&out);
    root.Raw("now", Time3(s.now));
    root.Raw(key, Array(items, each));
  }
  return out;
}

}  // namespace

std::string RenderJobs(const State& s) {
  return List(s, "jobs", s.jobs, [](const JobView& j, std::string* out) {
    const JobStatusInfo& st = j.status;
    Obj o(out);
    o.U("id", st.id).Str("name", st.name).Str("state", JobStateName(st.state));
    o.U("tasks", st.tasks).U("committed", st.committed).U("running", st.running);
    o.U("attempts", st.attempts).U("copies", st.copies).U("copies_won", j.copies_won);
    o.U("restarts", j.restarts).U("failed_attempts", st.failed_attempts);
    o.U("copies_refused_side_effects", st.copies_refused_side_effects);  // not idempotent: not copied
    o.Raw("run_p50_s", Time3(j.run_p50)).Raw("run_p99_s", Time3(j.run_p99));
    o.Raw("submitted", Time3(st.submitted));
    o.Raw("latency_s", st.state == JobState::kRunning ? "null" : Time3(std::max(0.0, st.finished - st.submitted)));
    o.Str("reason", st.reason);
    return true;
  });
}

std::string RenderExecutors(const State& s) {
  std::string json;
  {
    Obj root(&json);
    root.Raw("now", Time3(s.now)).U("total", s.executors_total).U("not_healthy", s.executors_not_healthy);
    root.U("slots", s.total_slots).U("running", s.running_total);
    root.Raw("executors", Array(s.executors, [&](const ExecutorStatusInfo& e, std::string* out) {
               Obj o(out);
               o.U("id", e.id).Str("name", e.name).Str("host", e.host);
               o.U("slots", e.slots).U("gpus", e.gpus).U("running", e.running).U("finished", e.finished);
               o.D("load", e.slots ? static_cast<double>(e.running) / e.slots : 0);
               o.B("quarantined", e.quarantined);
               o.Str("health", NodeHealthName(e.health.state)).D("speed_factor", e.health.speed_factor);
               o.Raw("last_seen_ago_s", Time3(std::max(0.0, s.now - e.last_seen)));
               return true;
             }));
  }
  return json;
}

std::string RenderAttempts(const State& s, uint64_t since) {
  std::string out;
  {
    Obj root(&out);
    root.Raw("now", Time3(s.now)).U("last_seq", s.last_seq).U("ring", kRecentAttempts);
    root.Raw("attempts", Array(s.attempts, [&](const AttemptView& a, std::string* arr) {
      if (!a.live && a.seq <= since) return false;
      Obj o(arr);
      o.U("seq", a.seq).U("id", a.attempt).U("job", a.job).U("task", a.task).U("executor", a.executor);
      o.Str("kind", AttemptKindName(a.kind));
      o.Str("outcome", a.live ? "running" : AttemptOutcomeName(a.outcome));
      o.Raw("queued", Time3(a.queued)).Raw("started", Time3(a.started)).Raw("finished", Time3(a.finished));
      o.Raw("run_s", Time3(a.run_s));
      return true;
    }));
  }
  return out;
}

std::vector<OwnerShareInfo> TopOwners(std::vector<OwnerShareInfo> all) {
  std::stable_sort(all.begin(), all.end(),
                   [](const OwnerShareInfo& a, const OwnerShareInfo& b) { return a.slots > b.slots; });
  if (all.size() <= kMaxOwnerSeries) return all;
  OwnerShareInfo rest;
  rest.owner = "(others)";
  rest.weight = 0;
  for (size_t i = kMaxOwnerSeries; i < all.size(); ++i) {
    rest.slots += all[i].slots;
    rest.jobs += all[i].jobs;
    rest.weight += all[i].weight;
    rest.waiting |= all[i].waiting;
  }
  all.resize(kMaxOwnerSeries);
  all.push_back(rest);
  return all;
}

std::string RenderOwners(const State& s) {
  double active_weight = 0;  // owners with running jobs share the fleet
  for (const OwnerShareInfo& o : s.owners)
    if (o.jobs > 0) active_weight += o.weight;
  auto row = [&](const OwnerShareInfo& o, std::string* arr) {
    Obj j(arr);
    j.Str("owner", o.owner).D("weight", o.weight).U("max_slots", o.max_slots).U("slots", o.slots);
    j.U("jobs", o.jobs).B("waiting", o.waiting);
    j.D("share", s.total_slots ? static_cast<double>(o.slots) / s.total_slots : 0);
    j.D("fair_share", o.jobs > 0 && active_weight > 0 ? o.weight / active_weight : 0);
    return true;
  };
  std::string out;
  {
    Obj root(&out);
    root.U("total_slots", s.total_slots);
    root.Raw("owners", Array(s.owners, row));
  }
  return out;
}

std::string RenderLatency(const State& s) {
  std::string out;
  {
    Obj root(&out);
    root.U("jobs_finished", s.jobs_finished).U("window", kLatencySamples);
    root.Raw("latencies_s", Array(s.latencies, [](double v, std::string* arr) {
      *arr += Time3(v);
      return true;
    }));
  }
  return out;
}

}  // namespace tailcut::dashboard
