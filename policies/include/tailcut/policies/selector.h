// `default` (issue 39; docs/POLICIES.md, "The default: chosen per class by
// replay"): for each task class, the candidate policy a replay of that
// class's recent work says is best, `none` always among the candidates.
//
// It runs its first candidate (the inner chain, best on most shapes) until
// a class has `first_replay_jobs` finished jobs, then replays the class's
// learned model (beside the other classes' load) under every candidate
// (ReplayEngine) and runs the winner for that class until the next replay,
// at each doubling of its finished jobs. A candidate's chain sees the
// events from the first time a class runs it, and from then on every event
// (it may hold quarantines to release; switched back to, it knows the
// history), so candidates never chosen cost nothing; but a chain's clones,
// copies and restarts pass only for jobs of the classes it was chosen for,
// and its quarantines and placement advice (AvoidExecutor) only while some
// class runs it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"
#include "tailcut/policies/inner_wake_ups.h"
#include "tailcut/policies/replay.h"

namespace tailcut {

namespace policy_util {
class FirstAttempts;
}

struct SelectorOptions {
  // --policy entries ("a+b" chains); the first runs until a replay chooses.
  std::string candidates = "clone+predictive+reassign,late,hedge,spark,none";
  // A class's first replay once this many of its jobs finished (and 8 of
  // its first attempts ended), then at each doubling: O(log) replays.
  uint32_t first_replay_jobs = 12;
  uint32_t replay_jobs = 300;   // jobs per replayed run
  uint32_t replay_seeds = 2;    // workloads each candidate is replayed on (the same for all); scores are the means
  uint32_t max_samples = 2048;  // run times kept per class (the most recent)
  double margin = 0.15;         // leave the chain in force unless the winner's replayed p99 is this much lower
  double p50_slack = 1.02;      // a candidate's replayed p50 must stay within this x none's
  double min_gain = 0;          // ... and its replayed p99 this much below none's (the replay's error)
  uint32_t max_classes = 256;   // classes learned at once; beyond, new classes run the first candidate
  // Replays at all (false: the first candidate runs for every class). The
  // daemon runs them on a thread of its own (ReplayThread): at most
  // `replay_queue` waiting, at nice `replay_nice`.
  bool replay = true;
  uint32_t replay_queue = 4;
  uint32_t replay_nice = 10;
};
Status LoadSelectorOptions(const Config& cfg, const std::string& prefix, SelectorOptions* o);

class SelectorPolicy final : public MitigationPolicy {
 public:
  // `chains[i]` is candidate `names[i]`'s chain; `engine` may be null.
  SelectorPolicy(SelectorOptions o, std::vector<std::string> names, std::vector<PolicyChain> chains,
                 std::unique_ptr<ReplayEngine> engine);
  ~SelectorPolicy() override;
  std::string_view name() const override { return "default"; }

  // The candidates, in order (the first runs until a replay chooses).
  const std::vector<std::string>& candidates() const { return names_; }
  // The candidate in force for `task_class` ("" before its first job).
  std::string Choice(const std::string& task_class) const;
  // Replays finished so far (all classes).
  uint64_t replays() const { return replays_; }
  // The last model replayed for `task_class` (for tests and logs).
  const ReplayModel* LastModel(const std::string& task_class) const;

  void OnJobSubmitted(const ClusterView& v, JobId job, std::vector<Proposal>* out) override;
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;
  void OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& e,
                      std::vector<Proposal>* out) override;
  void OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c, std::vector<Proposal>* out) override;
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnJobEnded(const ClusterView& v, JobId job, tailcut::JobState state, std::vector<Proposal>* out) override;
  bool AvoidExecutor(const ClusterView& v, ExecutorId e) const override;

 private:
  struct Sample {
    double t;
    ExecutorId executor;
    // > 0: cut short at this run time by a race that began with the
    // attempt (a clone: the cut does not depend on its length), imputed
    // per replay above it (Model); `t` is the predictor's total.
    double cut = 0;
  };
  struct Class {
    uint32_t choice = 0;                           // index into names_
    uint64_t done = 0, seen = 0, next_replay = 0;  // jobs finished, first attempts ended
    std::deque<double> submits;                    // the last submit times
    uint32_t live = 0, max_live = 0;
    uint32_t tasks = 0, needed = 0;
    std::deque<Sample> samples;
    double redo = 0, redo_long = 0;  // repeated attempts judged, and how many were long
    bool replaying = false;
    ReplayModel last;
  };
  struct JobState {
    std::string cls;
    Class* c = nullptr;  // classes_[cls] (classes are never dropped)
    uint32_t commits = 0, needed = 0;
  };

  Class* ClassOf(JobId job);
  Class* ClassOfAttempt(const ClusterView& v, AttemptId a);
  template <typename Hook>
  void Each(const ClusterView& v, std::vector<Proposal>* out, const Hook& hook);
  void Filter(const ClusterView& v, uint32_t source, std::vector<Proposal>& in, std::vector<Proposal>* out);
  bool Active(uint32_t candidate) const;
  void Relist();  // fed_list_ and active_list_ from fed_, running_ and classes_
  void Learn(const ClusterView& v, const AttemptView& a, const AttemptEnd& e, JobState* job);
  void MaybeReplay(const ClusterView& v, const std::string& name, Class& c);
  void Collect();
  static double Rate(const Class& c);
  static void ImputeCut(std::vector<std::pair<double, double>> cut, uint64_t seed, std::vector<double>* times);
  ReplayModel Model(const ClusterView& v, const std::string& name, const Class& c) const;

  SelectorOptions o_;
  std::vector<std::string> names_;
  PolicyChain flat_;             // every candidate's policies, in order
  std::vector<uint32_t> owner_;  // flat_[i]'s candidate
  std::unique_ptr<ReplayEngine> engine_;
  std::string replaying_;  // the class whose replay is in flight
  uint64_t replays_ = 0;
  std::map<std::string, Class> classes_;
  std::vector<uint32_t> running_;  // per candidate, the classes that run it
  std::vector<char> fed_;          // per candidate: some class ran it (its chain sees the events)
  // flat_ indices of the fed candidates' policies (Each) and of the active
  // ones' (AvoidExecutor): changed only with a new class or a replay's
  // verdict, walked per event (issue 41).
  std::vector<uint32_t> fed_list_, active_list_;
  std::unordered_map<JobId, JobState> jobs_;
  // Finished jobs that needed fewer commits than tasks, the most recent
  // kMaxEnded: their first attempts still running end after them (Learn).
  std::unordered_map<JobId, Class*> ended_;
  std::deque<JobId> ended_order_;
  // Each launched task's first attempt, until it commits; a repeat is
  // judged against the class's first runs (Learn).
  std::unique_ptr<policy_util::FirstAttempts> tasks_;
  // First attempts whose copy was launched before they had run (a race
  // from the start: clone), until they end.
  std::unordered_set<AttemptId> raced_;
  // First attempts that lost a race: their task committed through a copy
  // and they end right after, cut short (learned, then dropped from tasks_).
  std::unordered_set<AttemptId> lost_;
  InnerWakeUps wakeups_;
  std::vector<Proposal> scratch_;  // Each's and OnWakeUp's, reused
};

// [policies.selector]; `default` of the registry.
StatusOr<std::unique_ptr<MitigationPolicy>> MakeSelectorPolicy(const Config& cfg, const std::string& prefix,
                                                               const PolicyServices& services);

}  // namespace tailcut
