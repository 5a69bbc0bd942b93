// `expected_finish` (the default): a task goes where it is expected to
// finish first. Expected finish on a free executor = now + d x speed, with d
// the predicted run time of the task on a typical executor (PredictorSuite,
// else the job's typical run time) and speed the executor's speed factor.
// The alternative is the faster executors, all busy (else one of them would
// be free): they finish their running work and then this job's remaining
// tasks, in rounds of their slots. A free executor slower than that pool
// gets the task only when it finishes it first; otherwise the task waits.
// So a 5x slow executor still takes one task of a long job, and none
// of a short one. Tasks are held only off executors the fail-slow detector
// confirmed (speed factors of healthy ones are too noisy to hold work on),
// and other runnable jobs count in the queue ahead (docs/PLACEMENT.md).
//
// Cost: no scan of the fleet per task. Free executors are listed in
// buckets of speed (a quarter octave each), and each bucket keeps its
// capacity (slots, slots / speed) and the sum of its live attempts'
// expected ends, so a decision is O(buckets) plus the stale entries it
// drops (each entry is dropped once).
//
// Quarantine applies only to executors at least core.quarantine_speed_factor
// times slower than typical: slower ones would finish a task after any
// job's horizon; the others are better used for what they finish in time.
// The queue ahead of the faster executors is estimated without a scan: this
// job's remaining tasks times the runnable jobs.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <deque>

#include "placement_strategy.h"
#include "tailcut/common/executor_map.h"
#include "tailcut/common/id_map.h"

namespace tailcut::core {

class ExpectedFinishPlacement final : public PlacementStrategy {
 public:
  ExpectedFinishPlacement(CoreState& s, Placement& place) : s_(s), place_(place) {}
  std::string_view name() const override { return "expected_finish"; }
  void ExecutorChanged(const ExecutorState& e) override;
  void ExecutorRemoved(ExecutorId e) override;
  void AttemptLinked(const Job& job, const Attempt& a) override;
  void AttemptEnded(const Attempt& a) override;
  ExecutorId PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred,
                      ExecutorId fallback_only) override;
  bool AllowsQuarantine(const ExecutorState& e) const override;
  bool HeldLastPick() const override { return held_; }

  static constexpr int kBuckets = 48;
  // Bucket b holds speed factors around 2^((b - 8) / 4): 0.25x .. ~800x.
  static int BucketOf(double speed);
  static double BucketSpeed(int b);

  // Predicted run time of (job, t) on a typical executor; 0 when unknown.
  double PredictedRun(const Job& job, TaskIndex t) const;
  // When the executors faster than bucket `b` are expected to have run
  // `tasks` more tasks of run time `d` after their current work (seconds
  // from now); negative when there are none.
  double FasterPoolFinish(int b, double d, uint32_t tasks) const;

 private:
  bool held_ = false;  // HeldLastPick
  struct Pool {
    uint32_t slots = 0;
    double rate = 0;     // sum of slots / speed: typical tasks per typical run time
    double end_sum = 0;  // sum of the expected ends of live attempts counted here
    uint32_t live = 0;
  };
  struct Exec {
    int bucket = -1;        // bucket its capacity counts in; -1 none (quarantined)
    double rate = 0;
    int listed = -1;        // bucket of its free-list entry; -1 none
    bool listed_avoided = false;  // ... in free_avoided_ (a policy avoids it)
  };
  struct Live {
    int bucket = 0;
    double end = 0;
  };
  double Speed(ExecutorId e) const;
  ExecutorId PickFastest(const Job& job, TaskIndex t, bool copy, ExecutorId fallback_only, int* bucket);
  // The fastest free executor in a bucket below `below` that a policy
  // advises against and that fits task t of `job`; 0 when none.
  ExecutorId FastestAvoided(const Job& job, TaskIndex t, int below);
  // Whether any attempt runs on an executor faster than bucket `b`.
  bool FasterPoolRuns(int b) const;
  static constexpr size_t kAvoidedLook = 64;  // entries looked at per bucket
  bool Usable(ExecutorId id, int b, bool avoided) const;
  void Clean(int b, bool avoided, bool all);
  std::deque<ExecutorId>& List(int b, bool avoided) { return avoided ? free_avoided_[b] : free_[b]; }
  // The first bucket at or after `from` whose list (`avoided` or not) has
  // entries; kBuckets when none. Performance: a placement that finds the
  // only executor full (every pipelined no-op) looked at all 2 x kBuckets
  // lists, 10% of the scheduler's samples on one executor (issue 41).
  int NextListed(int from, bool avoided) const {
    const uint64_t m = from < kBuckets ? listed_[avoided] >> from : 0;
    return m ? from + std::countr_zero(m) : kBuckets;
  }
  // Keeps bucket b's bit in listed_ equal to whether its list has entries.
  void SyncListed(int b, bool avoided) {
    const uint64_t bit = uint64_t{1} << b;
    if (List(b, avoided).empty())
      listed_[avoided] &= ~bit;
    else
      listed_[avoided] |= bit;
  }

  CoreState& s_;
  Placement& place_;
  std::array<Pool, kBuckets> pools_{};
  std::array<std::deque<ExecutorId>, kBuckets> free_{};
  std::array<std::deque<ExecutorId>, kBuckets> free_avoided_{};
  std::array<uint64_t, 2> listed_{};  // [avoided]: bit b set while List(b, avoided) has entries
  static_assert(kBuckets <= 64);
  ExecutorMap<Exec> execs_;  // dense by id: every placement walk asks
  IdMap<Live> live_;         // flat: an entry per launch, no node (issue 41)
};

}  // namespace tailcut::core
