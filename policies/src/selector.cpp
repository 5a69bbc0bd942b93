#include "tailcut/policies/selector.h"

#include <algorithm>
#include <cmath>

#include "first_attempts.h"
#include "policy_util.h"
#include "tailcut/common/log.h"
#include "tailcut/common/random.h"
#include "tailcut/policies/registry.h"
#include "tailcut/policies/scheduling_config.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

using namespace policy_util;

Status LoadSelectorOptions(const Config& cfg, const std::string& prefix, SelectorOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("candidates", &o->candidates)
      .Get("first_replay_jobs", &o->first_replay_jobs)
      .Get("replay_jobs", &o->replay_jobs)
      .Get("replay_seeds", &o->replay_seeds)
      .Get("max_samples", &o->max_samples)
      .Get("margin", &o->margin)
      .Get("p50_slack", &o->p50_slack)
      .Get("min_gain", &o->min_gain)
      .Get("max_classes", &o->max_classes)
      .Get("replay", &o->replay)
      .Get("replay_queue", &o->replay_queue)
      .Get("replay_nice", &o->replay_nice)
      .Check(!SplitPolicyList(o->candidates).empty(), "candidates must name at least one entry")
      .Check(o->first_replay_jobs >= 2, "first_replay_jobs must be >= 2")
      .Check(o->replay_jobs >= 10 && o->replay_jobs <= 100000, "replay_jobs must be in [10, 100000]")
      .Check(o->replay_seeds >= 1 && o->replay_seeds <= 16, "replay_seeds must be in [1, 16]")
      .Check(o->max_samples >= 16 && o->max_samples <= (1u << 20), "max_samples must be in [16, 1048576]")
      .Check(o->margin >= 0 && o->margin < 1, "margin must be in [0, 1)")
      .Check(o->p50_slack >= 1, "p50_slack must be >= 1")
      .Check(o->min_gain >= 0 && o->min_gain < 1, "min_gain must be in [0, 1)")
      .Check(o->max_classes >= 1, "max_classes must be >= 1")
      .Check(o->replay_queue >= 1 && o->replay_queue <= 1024, "replay_queue must be in [1, 1024]")
      .Check(o->replay_nice <= 19, "replay_nice must be in [0, 19]");
  return p.status();
}

namespace {
constexpr size_t kSubmits = 256;         // submit times kept per class (the arrival rate's window)
// Jobs and tasks tracked at once. Past it, the smallest (job, task) goes
// (the oldest job's); a job past it is not tracked, so that no tracked one
// is dropped (jobs_ holds live jobs only: OnJobEnded), and runs the first
// candidate, unlearned, as a job of a class past max_classes.
constexpr size_t kMaxTracked = 1 << 18;
constexpr size_t kMaxEnded = 4096;       // finished k_of_n jobs whose cut-short attempts are awaited
}  // namespace

SelectorPolicy::SelectorPolicy(SelectorOptions o, std::vector<std::string> names, std::vector<PolicyChain> chains,
                               std::unique_ptr<ReplayEngine> engine)
    : o_(std::move(o)),
      names_(std::move(names)),
      engine_(std::move(engine)),
      running_(names_.size(), 0),
      fed_(names_.size(), 0),
      tasks_(std::make_unique<FirstAttempts>()) {
  if (!fed_.empty()) fed_[0] = 1;  // the first candidate runs from the start
  for (uint32_t c = 0; c < chains.size(); ++c)
    for (auto& p : chains[c]) {
      flat_.push_back(std::move(p));
      owner_.push_back(c);
    }
  Relist();
}

void SelectorPolicy::Relist() {
  fed_list_.clear();
  active_list_.clear();
  for (uint32_t i = 0; i < flat_.size(); ++i) {
    if (fed_[owner_[i]]) fed_list_.push_back(i);
    if (Active(owner_[i])) active_list_.push_back(i);
  }
}

SelectorPolicy::~SelectorPolicy() = default;

std::string SelectorPolicy::Choice(const std::string& task_class) const {
  auto it = classes_.find(task_class);
  return it == classes_.end() ? "" : names_[it->second.choice];
}

const ReplayModel* SelectorPolicy::LastModel(const std::string& task_class) const {
  auto it = classes_.find(task_class);
  return it == classes_.end() || it->second.last.times.empty() ? nullptr : &it->second.last;
}

SelectorPolicy::Class* SelectorPolicy::ClassOf(JobId job) {
  auto j = jobs_.find(job);
  if (j == jobs_.end()) return nullptr;
  return j->second.c;
}

SelectorPolicy::Class* SelectorPolicy::ClassOfAttempt(const ClusterView& v, AttemptId a) {
  AttemptView av;
  return v.FindAttempt(a, &av) ? ClassOf(av.job) : nullptr;
}

bool SelectorPolicy::Active(uint32_t candidate) const {
  return classes_.empty() ? candidate == 0 : running_[candidate] > 0;
}

void SelectorPolicy::Filter(const ClusterView& v, uint32_t source, std::vector<Proposal>& in,
                            std::vector<Proposal>* out) {
  const uint32_t cand = owner_[source];
  for (Proposal& p : in) {
    bool pass = true;
    switch (p.kind) {
      case Proposal::Kind::kWakeUp: wakeups_.Add(p.attempt, p.at, source); break;
      case Proposal::Kind::kLaunchCopy:
      case Proposal::Kind::kCloneAtLaunch: {
        Class* c = ClassOf(p.job);
        pass = c ? c->choice == cand : cand == 0;
        break;
      }
      case Proposal::Kind::kCancelAttempt: {
        Class* c = ClassOfAttempt(v, p.attempt);
        pass = c ? c->choice == cand : cand == 0;
        break;
      }
      case Proposal::Kind::kQuarantine: pass = Active(cand); break;
      // A release undoes a quarantine the chain made while it ran: always.
      case Proposal::Kind::kRelease: break;
    }
    if (pass) out->push_back(std::move(p));
  }
}

template <typename Hook>
void SelectorPolicy::Each(const ClusterView& v, std::vector<Proposal>* out, const Hook& hook) {
  std::vector<Proposal>& mine = scratch_;  // kept: no allocation per event (issue 41)
  for (uint32_t i : fed_list_) {
    mine.clear();
    hook(*flat_[i], &mine);
    Filter(v, i, mine, out);
  }
}

void SelectorPolicy::OnJobSubmitted(const ClusterView& v, JobId job, std::vector<Proposal>* out) {
  JobView j;
  if (v.FindJob(job, &j) && j.def && j.def->TaskCount() > 0) {
    const std::string cls = j.def->Task(0).ClassName();
    if (jobs_.size() < kMaxTracked && (classes_.count(cls) || classes_.size() < o_.max_classes)) {
      Class& c = classes_[cls];
      if (c.next_replay == 0) {  // new: runs the first candidate
        c.next_replay = o_.first_replay_jobs;
        running_[c.choice]++;
        Relist();
      }
      c.submits.push_back(v.Now());
      if (c.submits.size() > kSubmits) c.submits.pop_front();
      c.max_live = std::max(c.max_live, ++c.live);
      c.tasks = j.tasks;
      c.needed = j.needed;
      jobs_[job] = {cls, &c, 0, j.needed};
    }
  }
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnJobSubmitted(v, job, o); });
}

void SelectorPolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  Collect();
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnTick(v, o); });
}

void SelectorPolicy::OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  if (!a.copy) {
    if (tasks_->size() >= kMaxTracked) tasks_->EraseSmallest();
    tasks_->Add(a.job, a.task, a.attempt);
  } else if (AttemptId first = tasks_->Find(a.job, a.task); first != 0) {
    // A copy launched before the first attempt ran (a clone) races it
    // from the start: who loses does not depend on how long the first
    // would have taken. A copy launched later was launched because the
    // first looked slow.
    // (Events arrive queued: judged by the launch and start times.)
    AttemptView f;
    if (v.FindAttempt(first, &f) && (f.queued >= a.queued || f.started < 0 || f.started >= a.queued)) {
      if (raced_.size() >= kMaxTracked) raced_.clear();
      raced_.insert(first);
    }
  }
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptLaunched(v, a, o); });
}

void SelectorPolicy::OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptStarted(v, a, o); });
}

void SelectorPolicy::OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptProgress(v, a, o); });
}

// What an ended attempt says about its class: a first attempt's run time
// (cut short: the predicted total given how far it got), and for a
// repeated attempt whether it was long too (the task's slowness, not the
// attempt's).
void SelectorPolicy::Learn(const ClusterView& v, const AttemptView& a, const AttemptEnd& e, JobState* job) {
  // A job that needed fewer commits than it has tasks (k_of_n, quorum)
  // finishes with its slowest tasks still running; their attempts end, cut
  // short, after it: the class's tail, learned through ended_.
  Class* cp = nullptr;
  bool after = false;
  if (job) {
    cp = job->c;
  } else if (auto it = ended_.find(a.job); it != ended_.end()) {
    cp = it->second;
    after = true;
  } else {
    return;
  }
  Class& c = *cp;
  const AttemptId first = tasks_->Find(a.job, a.task);
  if (first == 0) return;
  const double elapsed = a.started >= 0 ? e.ended - a.started - v.ReportLag() : 0;
  const bool done = e.outcome == AttemptOutcome::kCommitted;
  double t = done ? e.run_s : elapsed;
  if (!done && elapsed > 0) {
    JobView j;
    const PredictorSuite* pred = v.Predictors();
    if (pred && v.FindJob(a.job, &j) && j.def && a.task < j.def->TaskCount())
      t = std::max(t, pred->Assess(ToRunning(a, j.def->Task(a.task), elapsed)).expected_total);
  }
  if (a.attempt == first) {
    const bool raced = raced_.erase(first) > 0;
    if (lost_.erase(first) > 0 || after) tasks_->Erase(a.job, a.task);
    if (t <= 0) return;
    c.seen++;
    c.samples.push_back({t, a.executor, !done && raced && elapsed > 0 ? elapsed : 0});
    if (c.samples.size() > o_.max_samples) c.samples.pop_front();
    return;
  }
  if (t <= 0) return;
  if (after) return;
  // A repeated attempt: long means past the class's upper quartile. Cut
  // short below it says nothing.
  if (c.samples.size() < 8) return;
  std::vector<double> ts;
  ts.reserve(c.samples.size());
  for (const Sample& s : c.samples) ts.push_back(s.t);
  std::nth_element(ts.begin(), ts.begin() + ts.size() * 3 / 4, ts.end());
  const double q75 = ts[ts.size() * 3 / 4];
  const double mine = done ? e.run_s : elapsed;
  if (!done && mine < q75) return;
  c.redo++;
  c.redo_long += mine >= q75;
}

void SelectorPolicy::OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& e,
                                    std::vector<Proposal>* out) {
  wakeups_.Forget(a.attempt);
  auto jt = jobs_.find(a.job);  // the inner hooks below leave jobs_ alone
  Learn(v, a, e, jt == jobs_.end() ? nullptr : &jt->second);
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptEnded(v, a, e, o); });
  if (e.outcome != AttemptOutcome::kCommitted) return;
  // A copy won while the first attempt still runs: the first ends, cut
  // short, right after (its end is learned, then its entry goes: Learn).
  const AttemptId first = tasks_->Find(a.job, a.task);
  const bool lost = first != 0 && first != a.attempt && a.task_live > 1 && raced_.count(first) > 0;
  if (lost) {
    if (lost_.size() >= kMaxTracked) lost_.clear();
    lost_.insert(first);
  } else {
    tasks_->Erase(a.job, a.task);
  }
  if (jt == jobs_.end() || ++jt->second.commits < jt->second.needed) return;
  const std::string cls = jt->second.cls;
  Class& c = *jt->second.c;
  if (jt->second.needed < c.tasks || lost) {  // its other tasks' first attempts end after it (Learn)
    ended_.emplace(a.job, &c);
    ended_order_.push_back(a.job);
    if (ended_order_.size() > kMaxEnded) {
      ended_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
  }
  jobs_.erase(jt);
  if (c.live > 0) c.live--;
  c.done++;
  MaybeReplay(v, cls, c);
  Collect();
}

// A job that failed or was cancelled leaves the class's live jobs (one
// that succeeded left them with its last commit: OnAttemptEnded).
void SelectorPolicy::OnJobEnded(const ClusterView& v, JobId job, tailcut::JobState state, std::vector<Proposal>* out) {
  if (auto jt = jobs_.find(job); jt != jobs_.end()) {
    if (jt->second.c->live > 0) jt->second.c->live--;
    jobs_.erase(jt);
  }
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnJobEnded(v, job, state, o); });
}

void SelectorPolicy::OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c,
                                       std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnExecutorChanged(v, e, c, o); });
}

void SelectorPolicy::OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  std::vector<uint32_t> due = wakeups_.TakeDue(a.attempt, v.Now());
  std::vector<Proposal>& mine = scratch_;
  for (uint32_t i : due) {
    mine.clear();
    flat_[i]->OnWakeUp(v, a, &mine);
    Filter(v, i, mine, out);
  }
}

// The advice of the chains some class runs (a chain no class runs keeps
// its opinions to itself). The answer flips with a class's choice, not
// with an event of the executor: the core asks again on its sweep
// (Placement::RefreshAvoidSweep).
bool SelectorPolicy::AvoidExecutor(const ClusterView& v, ExecutorId e) const {
  for (uint32_t i : active_list_)
    if (flat_[i]->AvoidExecutor(v, e)) return true;
  return false;
}

// Kaplan-Meier's redistribution to the right, by sampling: each attempt
// cut short in a race from the start, the highest cut first, takes a time
// drawn from the exact and already imputed times above its cut (the
// censoring is independent of the time there, issue 39); with none above,
// the predictor's total.
void SelectorPolicy::ImputeCut(std::vector<std::pair<double, double>> cut, uint64_t seed, std::vector<double>* times) {
  if (cut.empty()) return;
  std::vector<double> pool = *times;
  std::sort(pool.begin(), pool.end());
  std::sort(cut.begin(), cut.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  Rng rng(seed);
  for (const auto& [at, total] : cut) {
    auto from = std::upper_bound(pool.begin(), pool.end(), at);
    const size_t above = static_cast<size_t>(pool.end() - from);
    const double t = above == 0 ? std::max(at, total) : *(from + static_cast<ptrdiff_t>(rng.Below(above)));
    times->push_back(t);
    pool.insert(std::upper_bound(pool.begin(), pool.end(), t), t);
  }
}

// Jobs per second over the class's last submissions; 0 while unknown.
double SelectorPolicy::Rate(const Class& c) {
  if (c.submits.size() < 2 || c.submits.back() <= c.submits.front()) return 0;
  return static_cast<double>(c.submits.size() - 1) / (c.submits.back() - c.submits.front());
}

ReplayModel SelectorPolicy::Model(const ClusterView& v, const std::string& name, const Class& c) const {
  ReplayModel m;
  m.task_class = name;
  std::map<ExecutorId, uint32_t> index;
  m.executors = 0;
  m.slots = 1;
  v.ForEachExecutor([&](const ExecutorView& e) {
    index[e.id] = m.executors++;
    m.slots = std::max(m.slots, e.slots);
  });
  m.executors = std::max(m.executors, 1u);
  m.executor_factors.assign(m.executors, 1.0);
  // Slow executors: the median of their first attempts against the class's.
  auto median = [](std::vector<double> x) {
    std::nth_element(x.begin(), x.begin() + x.size() / 2, x.end());
    return x[x.size() / 2];
  };
  std::vector<double> all;
  std::map<ExecutorId, std::vector<double>> by;
  for (const Sample& s : c.samples) {
    all.push_back(s.t);
    by[s.executor].push_back(s.t);
  }
  const double mid = median(all);
  std::map<ExecutorId, double> factor;
  for (auto& [e, ts] : by) {
    if (ts.size() < 3 || !index.count(e)) continue;
    const double f = median(ts) / mid;
    if (f >= 1.5) factor[e] = m.executor_factors[index[e]] = f;
  }
  m.times.reserve(c.samples.size());
  std::vector<std::pair<double, double>> cut;  // (cut, predicted total) of the clone races' losers
  for (const Sample& s : c.samples) {
    auto f = factor.find(s.executor);
    const double k = f == factor.end() ? 1 : f->second;
    if (s.cut > 0)
      cut.emplace_back(s.cut / k, s.t / k);
    else
      m.times.push_back(s.t / k);
  }
  ImputeCut(std::move(cut), Mix(std::hash<std::string>()(name) + replays_ + 1), &m.times);
  m.closed = c.max_live <= 1;
  m.job_rate = Rate(c);
  m.tasks = std::max(c.tasks, 1u);
  m.needed = std::clamp(c.needed, 1u, m.tasks);
  // The other classes it shares the fleet with, the busiest first (their
  // offered work per second; a closed one's at one job per its mean).
  std::vector<std::pair<double, const Class*>> others;
  for (const auto& [n, o] : classes_) {
    if (&o == &c || o.samples.size() < 8) continue;
    double mean = 0;
    for (const Sample& x : o.samples) mean += x.t;
    mean /= o.samples.size();
    const double rate = o.max_live <= 1 || Rate(o) <= 0 ? 1 / std::max(mean, 1e-9) : Rate(o);
    others.emplace_back(rate * std::max(o.tasks, 1u) * mean, &o);
  }
  std::sort(others.begin(), others.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (others.size() > ReplayModel::kMaxOthers) others.resize(ReplayModel::kMaxOthers);
  constexpr size_t kOtherSamples = 512;  // the most recent of each
  for (const auto& [load, o] : others) {
    ReplayLoad l;
    l.closed = o->max_live <= 1;
    l.job_rate = Rate(*o);
    l.tasks = std::max(o->tasks, 1u);
    l.needed = std::clamp(o->needed, 1u, l.tasks);
    const size_t from = o->samples.size() > kOtherSamples ? o->samples.size() - kOtherSamples : 0;
    for (size_t i = from; i < o->samples.size(); ++i) {
      auto f = factor.find(o->samples[i].executor);
      l.times.push_back(f == factor.end() ? o->samples[i].t : o->samples[i].t / f->second);
    }
    m.others.push_back(std::move(l));
  }
  // Independent draws: a quarter of repeats land past the upper quartile;
  // the task's own slowness: all of them.
  if (c.redo >= 4) m.task_share = std::clamp((c.redo_long / c.redo - 0.25) / 0.75, 0.0, 1.0);
  m.jobs = o_.replay_jobs;
  m.seeds = o_.replay_seeds;
  m.seed = Mix(std::hash<std::string>()(name) + replays_);
  return m;
}

void SelectorPolicy::MaybeReplay(const ClusterView& v, const std::string& name, Class& c) {
  if (!engine_ || c.done < c.next_replay || c.seen < 8 || !replaying_.empty()) return;
  c.last = Model(v, name, c);
  if (!engine_->Start(c.last, names_)) return;
  replaying_ = name;
  c.next_replay = std::max<uint64_t>(2 * c.next_replay, c.done + 1);
}

// The replay's verdict: the candidate with the lowest replayed p99 among
// those that do no harm in it with room for the replay's error (p99 <=
// (1 - min_gain) x none's, p50 <= p50_slack x none's; `none` always
// qualifies); the chain in force stays unless the winner's p99 is `margin`
// lower.
void SelectorPolicy::Collect() {
  std::vector<ReplayScore> scores;
  if (replaying_.empty() || !engine_->Poll(&scores)) return;
  Class& c = classes_[replaying_];
  const std::string cls = std::move(replaying_);
  replaying_.clear();
  replays_++;
  const ReplayScore* none = nullptr;
  for (const ReplayScore& s : scores)
    if (s.candidate == "none" && s.ran) none = &s;
  if (!none) {
    LogLine(LogLevel::kDebug, "default: class " + cls + ": replay " + std::to_string(replays_) + " ran no `none`");
    return;
  }
  auto ok = [&](const ReplayScore& s) {
    return s.ran && (&s == none || (s.p99 <= (1 - o_.min_gain) * none->p99 && s.p50 <= o_.p50_slack * none->p50));
  };
  if (GetLogLevel() <= LogLevel::kDebug) {  // every candidate's replayed p50 / p99 (means over the seeds)
    std::string line = "default: class " + cls + " replay " + std::to_string(replays_) + " after " +
                       std::to_string(c.done) + " jobs under " + names_[c.choice] + ":";
    for (const ReplayScore& s : scores)
      line += " " + s.candidate + " " + std::to_string(s.p50) + "/" + std::to_string(s.p99);
    LogLine(LogLevel::kDebug, line);
  }
  const ReplayScore* best = none;
  const ReplayScore* incumbent = nullptr;
  for (const ReplayScore& s : scores) {
    if (s.candidate == names_[c.choice]) incumbent = &s;
    if (ok(s) && s.p99 < best->p99) best = &s;
  }
  if (incumbent && ok(*incumbent) && incumbent->p99 <= (1 + o_.margin) * best->p99) best = incumbent;
  auto it = std::find(names_.begin(), names_.end(), best->candidate);
  if (it == names_.end()) return;
  const uint32_t choice = static_cast<uint32_t>(it - names_.begin());
  if (choice == c.choice && GetLogLevel() <= LogLevel::kDebug)
    LogLine(LogLevel::kDebug, "default: class " + cls + " keeps " + best->candidate + " after replay " +
                                  std::to_string(replays_) + " (replayed p99 " + std::to_string(best->p99) + " s)");
  if (choice != c.choice)
    LogLine(LogLevel::kInfo,
            "default: class " + cls + " now runs " + best->candidate + " (replayed p99 " + std::to_string(best->p99) +
                " s, " + names_[c.choice] + " " + std::to_string(incumbent ? incumbent->p99 : -1) + " s, none " +
                std::to_string(none->p99) + " s; task share " + std::to_string(c.last.task_share) + ")");
  running_[c.choice]--;
  running_[choice]++;
  fed_[choice] = 1;
  c.choice = choice;
  Relist();
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeSelectorPolicy(const Config& cfg, const std::string& prefix,
                                                               const PolicyServices& services) {
  SelectorOptions o;
  if (Status s = LoadSelectorOptions(cfg, prefix, &o); !s.ok()) return s;
  std::vector<std::string> names;
  std::vector<PolicyChain> chains;
  for (const std::string& entry : SplitPolicyList(o.candidates)) {
    if (entry.find("default") != std::string::npos)
      return Status::InvalidArgument(prefix + "candidates: 'default' cannot be its own candidate");
    auto chain = MakePolicyEntry(entry, cfg);
    // A candidate the config refuses (single-tenant with [owners]) is no
    // candidate here: the user could not have picked it either.
    if (!chain.ok() && chain.status().message().find("single-tenant") != std::string::npos) continue;
    if (!chain.ok()) return chain.status();
    names.push_back(entry);
    chains.push_back(std::move(chain).value());
  }
  // Without an engine nothing is ever replayed: only the first candidate
  // (and `none`) are kept, so that no event pays for chains that never run
  // (every candidate was built above, so a bad one is still an error).
  if ((!services.replay || !o.replay) && names.size() > 1) {
    names.resize(1);
    chains.resize(1);
  }
  if (std::find(names.begin(), names.end(), "none") == names.end()) {
    names.push_back("none");  // `none` is always a candidate
    chains.emplace_back();
  }
  std::unique_ptr<ReplayEngine> engine = services.replay && o.replay ? services.replay() : nullptr;
  return std::unique_ptr<MitigationPolicy>(
      std::make_unique<SelectorPolicy>(o, std::move(names), std::move(chains), std::move(engine)));
}

}  // namespace tailcut
