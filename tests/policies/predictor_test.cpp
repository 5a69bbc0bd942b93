// Policies with a PredictorSuite. The core does not own one yet, so a test
// wrapper hands the policy a view whose Predictors() is a suite fed from the
// core's finished attempts.
#include <catch2/catch.hpp>

#include "sim.h"
#include "tailcut/policies/hedge.h"
#include "tailcut/policies/predictive.h"
#include "tailcut/predictors/predictor.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;
using tailcut::testing::Sim;

namespace {

class WithSuite final : public ClusterView {
 public:
  WithSuite(const ClusterView& v, const PredictorSuite* s) : v_(v), s_(s) {}
  Time Now() const override { return v_.Now(); }
  void ForEachJob(const std::function<void(const JobView&)>& f) const override { v_.ForEachJob(f); }
  void ForEachRunningAttempt(const std::function<void(const AttemptView&)>& f) const override {
    v_.ForEachRunningAttempt(f);
  }
  void ForEachExecutor(const std::function<void(const ExecutorView&)>& f) const override { v_.ForEachExecutor(f); }
  bool FindJob(JobId j, JobView* o) const override { return v_.FindJob(j, o); }
  bool FindExecutor(ExecutorId e, ExecutorView* o) const override { return v_.FindExecutor(e, o); }
  const std::vector<float>& CommittedRunTimes(JobId j) const override { return v_.CommittedRunTimes(j); }
  double MedianRunTime(JobId j) const override { return v_.MedianRunTime(j); }
  uint32_t CopiesAllowed() const override { return v_.CopiesAllowed(); }
  uint32_t TotalSlots() const override { return v_.TotalSlots(); }
  const PredictorSuite* Predictors() const override { return s_; }
  void ForEachAttemptOn(ExecutorId e, const std::function<void(const AttemptView&)>& f) const override {
    v_.ForEachAttemptOn(e, f);
  }
  bool FindAttempt(AttemptId a, AttemptView* o) const override { return v_.FindAttempt(a, o); }
  uint64_t FreeSlots() const override { return v_.FreeSlots(); }

 private:
  const ClusterView& v_;
  const PredictorSuite* s_;
};

struct Wrap final : MitigationPolicy {
  Wrap(std::unique_ptr<MitigationPolicy> p, const PredictorSuite* s) : inner(std::move(p)), suite(s) {}
  std::string_view name() const override { return inner->name(); }
  void OnJobSubmitted(const ClusterView& v, JobId j, std::vector<Proposal>* out) override {
    inner->OnJobSubmitted(WithSuite(v, suite), j, out);
  }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override { inner->OnTick(WithSuite(v, suite), out); }
  void OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    inner->OnAttemptLaunched(WithSuite(v, suite), a, out);
  }
  void OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    inner->OnAttemptStarted(WithSuite(v, suite), a, out);
  }
  void OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    inner->OnAttemptProgress(WithSuite(v, suite), a, out);
  }
  void OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& e,
                      std::vector<Proposal>* out) override {
    inner->OnAttemptEnded(WithSuite(v, suite), a, e, out);
  }
  void OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c, std::vector<Proposal>* out) override {
    inner->OnExecutorChanged(WithSuite(v, suite), e, c, out);
  }
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    inner->OnWakeUp(WithSuite(v, suite), a, out);
  }
  bool AvoidExecutor(const ClusterView& v, ExecutorId e) const override {
    return inner->AvoidExecutor(WithSuite(v, suite), e);
  }
  std::unique_ptr<MitigationPolicy> inner;
  const PredictorSuite* suite;
};

struct Feed final : CoreObserver {
  PredictorSuite* suite;
  explicit Feed(PredictorSuite* s) : suite(s) {}
  void OnAttemptEnded(const AttemptRecord& r) override { suite->Observe(r); }
};

}  // namespace

TEST_CASE("predictive with a predictor avoids slow executors and speculates on likely stragglers") {
  PredictorSuite suite;
  Feed feed(&suite);
  PolicyChain c;
  c.push_back(std::make_unique<Wrap>(std::make_unique<PredictivePolicy>(), &suite));
  Sim s(Sim::Opts(), std::move(c));
  s.h.core.AddObserver(&feed);
  auto slow = s.Exec(1, 10.0);
  for (int i = 0; i < 4; ++i) s.Exec();
  // History: earlier jobs of the same class teach the suite (~1 s).
  s.base = [](const LaunchCmd& l) { return 1.0 + 0.02 * (l.task % 5); };
  for (int r = 0; r < 3; ++r) {
    auto j = s.h.core.SubmitJob(CoreHarness::Fanout(4));
    REQUIRE(j.ok());
    s.Sync();
    REQUIRE(s.RunUntil(*j, 100));
  }
  // Placement: a new task is kept off the executor predicted slow.
  size_t before = s.h.launches.size();
  auto one = s.h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(one.ok());
  s.Sync();
  REQUIRE(s.h.launches.size() == before + 1);
  CHECK(s.h.launches.back().executor != slow);
  REQUIRE(s.RunUntil(*one, 100));
  // When every executor is needed, the attempt that lands on the slow one is
  // a likely straggler: as soon as a slot frees it gets a copy, or, hopeless
  // by Mantri's rule (the default restart), is restarted there.
  size_t copies = s.Copies();
  uint64_t restarts = s.h.core.Counters().attempts_restart;
  Time t0 = s.h.clock.Now();
  auto all = s.h.core.SubmitJob(CoreHarness::Fanout(5));
  REQUIRE(all.ok());
  s.Sync();
  REQUIRE(s.RunUntil(*all, 100));
  CHECK(s.Copies() + s.h.core.Counters().attempts_restart == copies + restarts + 1);
  CHECK(s.h.clock.Now() - t0 < 4);
}

TEST_CASE("predictive with restart kills a hopeless attempt instead of racing it") {
  PredictorSuite suite;
  Feed feed(&suite);
  PredictiveOptions o;
  o.restart = true;
  o.restart_p = 0.7;
  o.restart_ratio = 2.0;
  PolicyChain c;
  c.push_back(std::make_unique<Wrap>(std::make_unique<PredictivePolicy>(o), &suite));
  Sim s(Sim::Opts(), std::move(c));
  s.h.core.AddObserver(&feed);
  auto slow = s.Exec(1, 10.0);
  for (int i = 0; i < 4; ++i) s.Exec();
  s.base = [](const LaunchCmd& l) { return 1.0 + 0.02 * (l.task % 5); };
  for (int r = 0; r < 3; ++r) {
    auto j = s.h.core.SubmitJob(CoreHarness::Fanout(4));
    REQUIRE(j.ok());
    s.Sync();
    REQUIRE(s.RunUntil(*j, 100));
  }
  Time t0 = s.h.clock.Now();
  auto all = s.h.core.SubmitJob(CoreHarness::Fanout(5));  // one task must land on the slow executor
  REQUIRE(all.ok());
  s.Sync();
  REQUIRE(s.RunUntil(*all, 100));
  CHECK(s.h.clock.Now() - t0 < 4);
  size_t killed = 0;
  // The original was cancelled when the fresh attempt started (about 1 s
  // before the task committed), not left running until the copy won.
  for (auto& r : s.h.recorder.records)
    killed += r.executor == slow && r.outcome == AttemptOutcome::kCancelled && r.finished < s.h.clock.Now() - 0.5;
  CHECK(killed >= 1);
}

TEST_CASE("hedge falls back to the predictor's percentiles for a fresh job") {
  PredictorSuite suite;
  Feed feed(&suite);
  PolicyChain c;
  c.push_back(std::make_unique<Wrap>(std::make_unique<HedgePolicy>(), &suite));
  Sim s(Sim::Opts(), std::move(c));
  s.h.core.AddObserver(&feed);
  for (int i = 0; i < 3; ++i) s.Exec();
  s.base = [](const LaunchCmd& l) { return 1.0 + 0.02 * (l.task % 5); };
  auto warm = s.h.core.SubmitJob(CoreHarness::Fanout(12));
  REQUIRE(warm.ok());
  s.Sync();
  REQUIRE(s.RunUntil(*warm, 100));
  CHECK(s.Copies() == 0);  // healthy: quiet
  s.base = [](const LaunchCmd& l) { return l.copy ? 1.0 : 8.0; };
  Time t0 = s.h.clock.Now();
  auto j = s.h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(j.ok());
  s.Sync();
  REQUIRE(s.RunUntil(*j, 100));
  CHECK(s.Copies() == 1);
  CHECK(s.h.clock.Now() - t0 < 4);
}

namespace {
// One executor, one job and its live attempts, as the test sets them.
struct OneExecutorView final : ClusterView {
  Time now = 0;
  ExecutorView exec{.id = 1, .name = "one", .slots = 4};
  JobDef def = CoreHarness::Fanout(8, "noop");
  std::map<AttemptId, AttemptView> live;
  PredictorSuite suite;
  Time Now() const override { return now; }
  void ForEachJob(const std::function<void(const JobView&)>&) const override {}
  void ForEachRunningAttempt(const std::function<void(const AttemptView&)>& f) const override {
    for (auto& [id, a] : live) f(a);
  }
  void ForEachExecutor(const std::function<void(const ExecutorView&)>& f) const override { f(exec); }
  bool FindJob(JobId j, JobView* o) const override {
    if (j != 1) return false;
    *o = {.id = 1, .def = &def, .tasks = def.TaskCount(), .needed = def.TaskCount()};
    return true;
  }
  bool FindExecutor(ExecutorId e, ExecutorView* o) const override {
    if (e != exec.id) return false;
    *o = exec;
    return true;
  }
  bool FindAttempt(AttemptId a, AttemptView* o) const override {
    auto it = live.find(a);
    if (it == live.end()) return false;
    *o = it->second;
    return true;
  }
  const std::vector<float>& CommittedRunTimes(JobId) const override { return none_; }
  double MedianRunTime(JobId) const override { return 0; }
  uint32_t CopiesAllowed() const override { return 4; }
  uint32_t TotalSlots() const override { return exec.slots; }
  const PredictorSuite* Predictors() const override { return &suite; }
  AttemptView Launch(AttemptId id) {
    AttemptView a{.attempt = id, .job = 1, .task = static_cast<TaskIndex>(id), .executor = 1, .queued = now};
    live[id] = a;
    exec.used_slots++;
    return a;
  }

 private:
  std::vector<float> none_;
};
}  // namespace

// Tiny tasks pipelined beyond an executor's slots: issue 41's no-ops. An
// attempt queued behind others is judged on the time it has run, so its
// first look is armed at its start, not at its launch; one whose start and
// end came in one report asks for nothing.
TEST_CASE("predictive arms a queued attempt's first look at its start, and none for one that ended") {
  OneExecutorView v;
  PredictivePolicy p;
  std::vector<Proposal> out;
  v.exec.slots = 1;
  auto first = v.Launch(1);
  p.OnAttemptLaunched(v, first, &out);  // a free slot: judged from its launch
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == Proposal::Kind::kWakeUp);
  CHECK(out[0].at == Approx(first.queued + 0.001));  // min_runtime_s: the suite knows nothing yet
  out.clear();
  auto queued = v.Launch(2), ended = v.Launch(3);  // behind it
  p.OnAttemptLaunched(v, queued, &out);
  p.OnAttemptLaunched(v, ended, &out);
  CHECK(out.empty());
  v.now = 0.5;
  queued.started = v.live[2].started = 0.5;
  p.OnAttemptStarted(v, queued, &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].attempt == 2);
  CHECK(out[0].at == Approx(0.501));
  out.clear();
  ended.started = 0.5;
  v.live.erase(3);  // its start and its result in one report
  p.OnAttemptStarted(v, ended, &out);
  p.OnAttemptEnded(v, ended, AttemptEnd{.ended = 0.5, .run_s = 0}, &out);
  CHECK(out.empty());
  // A start of one never found queued arms nothing more.
  first.started = 0;
  p.OnAttemptStarted(v, first, &out);
  CHECK(out.empty());
}

namespace {
// `tailcut demo`'s shape in virtual time: 4 executors x 4 slots, the last 5x
// slow from the start; ten fan-outs of 16 tasks one after another, each
// job's tasks as long as each other (a seed per job). The wall of each job.
std::vector<double> DemoWalls(PolicyChain chain) {
  Sim s(Sim::Opts(), std::move(chain));
  for (int i = 0; i < 3; ++i) s.Exec(4);
  s.Exec(4, 5.0);
  const double job_s[] = {0.45, 0.51, 0.43, 0.29, 0.53, 0.29, 0.55, 0.49, 0.31, 0.50};
  std::vector<double> walls;
  for (double t : job_s) {
    s.base = [t](const LaunchCmd&) { return t; };
    Time t0 = s.h.clock.Now();
    auto j = s.h.core.SubmitJob(CoreHarness::Fanout(16));
    REQUIRE(j.ok());
    s.Sync();
    while (!s.h.finished.count(*j) && s.h.clock.Now() < t0 + 100) s.Step(0.005);
    REQUIRE(s.h.finished.count(*j));
    walls.push_back(s.h.clock.Now() - t0);
  }
  return walls;
}
}  // namespace

// Issue 39's live point (`tailcut demo --runs 10`: no job more than 10%
// slower under `default` than under `none`), in virtual time. Hidden: it
// fails today (jobs 3, 4 and 6 at 1.27x, 1.10x and 2.7x), the open point's
// reproducer: run `build/tests/policies/policies_predictor_test
// "[.issue39]"`. The slow executor's attempts look hopeless at once (its
// speed factor, learnt from job 1), and with no free slot they are
// restarted where they ran: on it again; each is cut at the same early
// age, too little to confirm it fail-slow, so placement keeps giving it a
// quarter of every job (docs/POLICIES.md, "The demo's per-job point").
TEST_CASE("predictive never makes a job slower than none on a fleet with a slow executor", "[.issue39]") {
  const std::vector<double> none = DemoWalls({});
  const std::vector<double> pred = DemoWalls(testing::Chain<PredictivePolicy>());
  for (size_t i = 0; i < none.size(); ++i) {
    INFO("job " << i + 1 << ": none " << none[i] << " s, predictive " << pred[i] << " s");
    CHECK(pred[i] <= 1.1 * none[i]);
  }
}
