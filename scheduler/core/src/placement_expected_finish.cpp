#include "placement_expected_finish.h"

#include <algorithm>
#include <cmath>

#include "placement.h"

namespace tailcut::core {

int ExpectedFinishPlacement::BucketOf(double speed) {
  if (!(speed > 0)) return 8;  // NaN or nonsense: typical
  return std::clamp(static_cast<int>(std::lround(4 * std::log2(speed))) + 8, 0, kBuckets - 1);
}

double ExpectedFinishPlacement::BucketSpeed(int b) { return std::exp2((b - 8) / 4.0); }

double ExpectedFinishPlacement::Speed(ExecutorId e) const {
  double s = s_.predictors->SpeedFactor(e);
  return std::isfinite(s) && s > 0 ? s : 1.0;
}

void ExpectedFinishPlacement::ExecutorChanged(const ExecutorState& e) {
  Exec& x = execs_[e.id];
  int b = e.quarantined ? -1 : BucketOf(Speed(e.id));
  if (b != x.bucket) {
    if (x.bucket >= 0) {
      pools_[x.bucket].slots -= e.desc.slots;
      pools_[x.bucket].rate -= x.rate;
    }
    x.bucket = b;
    x.rate = b >= 0 ? e.desc.slots / BucketSpeed(b) : 0;
    if (b >= 0) {
      pools_[b].slots += e.desc.slots;
      pools_[b].rate += x.rate;
    }
  }
  // Executors a policy avoids wait in their bucket's own list, so the walk
  // for a task does not pass them; they are the fallback.
  if (x.listed >= 0 && x.listed_avoided != e.avoided) x.listed = -1;  // its entry goes stale
  if (b >= 0 && x.listed != b && Placement::HasFreeSlot(e)) {
    x.listed = b;  // an entry in another bucket goes stale
    x.listed_avoided = e.avoided;
    List(b, e.avoided).push_back(e.id);
    SyncListed(b, e.avoided);
  }
}

void ExpectedFinishPlacement::ExecutorRemoved(ExecutorId id) {
  Exec* x = execs_.Find(id);
  if (!x) return;
  if (int b = x->bucket; b >= 0) {
    const ExecutorState* e = s_.FindExec(id);
    pools_[b].slots -= e ? e->desc.slots : 0;
    pools_[b].rate -= x->rate;
  }
  execs_.Erase(id);  // its free-list entries go stale
}

double ExpectedFinishPlacement::PredictedRun(const Job& job, TaskIndex t) const {
  const TaskDef& d = job.def.Task(t);
  LatencyEstimate est = s_.predictors->Predict(d.ClassName(), d.input_size, 0);
  if (est.known() && std::isfinite(est.median) && est.median > 0) return est.median;
  return job.typical_run_s > 0 ? job.typical_run_s : 0;
}

void ExpectedFinishPlacement::AttemptLinked(const Job& job, const Attempt& a) {
  const Exec* x = execs_.Find(a.executor);
  if (!x || x->bucket < 0) return;
  double d = PredictedRun(job, a.task);
  if (d <= 0) return;
  int b = x->bucket;
  Live l{b, a.queued + d * BucketSpeed(b)};  // queued: linked now (one clock read less per launch)
  pools_[b].end_sum += l.end;
  pools_[b].live++;
  live_[a.id] = l;
}

void ExpectedFinishPlacement::AttemptEnded(const Attempt& a) {
  const Live* l = live_.Find(a.id);
  if (!l) return;
  pools_[l->bucket].end_sum -= l->end;
  pools_[l->bucket].live--;
  live_.Erase(a.id);
}

double ExpectedFinishPlacement::FasterPoolFinish(int b, double d, uint32_t tasks) const {
  double now = s_.Now(), rate = 0, work = 0;
  uint32_t slots = 0;
  for (int k = 0; k < b; ++k) {
    const Pool& p = pools_[k];
    if (p.slots == 0) continue;
    slots += p.slots;
    rate += p.rate;
    // Work still to run, in typical seconds; overdue attempts count as done
    // (clipped per bucket).
    work += std::max(0.0, p.end_sum - p.live * now) / BucketSpeed(k);
  }
  if (slots == 0 || rate <= 0) return -1;
  double rounds = std::ceil(static_cast<double>(tasks) / slots);
  return work / rate + rounds * d * (slots / rate);  // slots / rate: the pool's mean speed
}

// Whether the entry `id` in bucket `b`'s list (`avoided` or not) can still
// take work: not stale, not busy, not quarantined.
bool ExpectedFinishPlacement::Usable(ExecutorId id, int b, bool avoided) const {
  const Exec* x = execs_.Find(id);
  if (!x || x->listed != b || x->listed_avoided != avoided) return false;
  const ExecutorState* e = s_.FindExec(id);
  // No speed lookup: a speed change re-lists the executor (ExecutorChanged,
  // after every Observe), which leaves this entry stale by `listed`.
  return e && !e->quarantined && e->avoided == avoided && Placement::HasFreeSlot(*e);
}

// Drops entries that cannot take work from one list (all of them, or only
// those at its front); each that was its executor's entry is re-listed
// where the executor belongs now, if anywhere.
void ExpectedFinishPlacement::Clean(int b, bool avoided, bool all) {
  std::deque<ExecutorId>& q = List(b, avoided);
  std::vector<ExecutorId> moved;
  auto drop = [&](ExecutorId id) {
    Exec* x = execs_.Find(id);
    if (x && x->listed == b && x->listed_avoided == avoided) {
      x->listed = -1;
      moved.push_back(id);
    }
  };
  if (all) {
    std::deque<ExecutorId> keep;
    for (ExecutorId id : q) Usable(id, b, avoided) ? keep.push_back(id) : drop(id);
    q.swap(keep);
  } else {
    while (!q.empty() && !Usable(q.front(), b, avoided)) {
      drop(q.front());
      q.pop_front();
    }
  }
  for (ExecutorId id : moved)
    if (const ExecutorState* e = s_.FindExec(id)) ExecutorChanged(*e);
  SyncListed(b, avoided);
}

ExecutorId ExpectedFinishPlacement::PickFastest(const Job& job, TaskIndex t, bool copy, ExecutorId fallback_only,
                                                int* bucket) {
  ExecutorId fallback = 0;
  int fallback_bucket = -1;
  // First the executors no policy avoids, fastest bucket first; then, only
  // for a task that is not a copy, the avoided ones (and a restart's old
  // executor, `fallback_only`), fastest first.
  for (bool avoided : {false, true}) {
    if (avoided && copy) return 0;  // copies never go where a policy advises against
    // Most of the 2 x kBuckets lists are empty on a small fleet, and a
    // full one fails every placement after the first: only listed buckets.
    for (int b = NextListed(0, avoided); b < kBuckets; b = NextListed(b + 1, avoided)) {
      if (avoided && fallback && b >= fallback_bucket) break;
      std::deque<ExecutorId>& q = List(b, avoided);
      Clean(b, avoided, false);
      // Entries further back may have gone stale too (busy, moved): when the
      // walk passes many, the list is compacted once, so the cost per
      // placement stays O(buckets) amortised at datacenter scale.
      size_t passed = 0;
      ExecutorId found = 0;
      for (ExecutorId id : q) {
        const ExecutorState* e = Usable(id, b, avoided) ? s_.FindExec(id) : nullptr;
        if (!e || !place_.Fits(job, t, *e, copy)) {
          ++passed;
          continue;
        }
        if (id == fallback_only) {  // usable: compacting would keep it
          if (!fallback) fallback = id, fallback_bucket = b;
          continue;
        }
        found = id;
        break;
      }
      if (passed > 64 && 2 * passed > q.size()) Clean(b, avoided, true);
      if (!found) continue;
      if (avoided) {
        fallback = found, fallback_bucket = b;
        break;
      }
      *bucket = b;
      return found;
    }
  }
  *bucket = fallback_bucket;
  return fallback;
}

ExecutorId ExpectedFinishPlacement::PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred,
                                             ExecutorId fallback_only) {
  held_ = false;
  if (preferred) {
    if (ExecutorState* e = s_.FindExec(preferred); e && place_.Fits(job, t, *e, copy)) return preferred;
  }
  int b = -1;
  ExecutorId id = PickFastest(job, t, copy, fallback_only, &b);
  if (!id || copy) return id;  // a copy is wanted now, where it is
  // A divisible job's share is sized by the executor's speed when it is
  // placed (work_shares.h): a slow executor gets a smaller share, not none.
  if (job.def.divisible_units > 0) return id;
  double d = PredictedRun(job, t);
  if (d <= 0) return id;  // nothing known yet: take what is free
  // The tasks the faster pool runs before it could take this one as its
  // last: this job's still to place (this one included) and, estimated
  // without a scan, as many for each other runnable job (entries are one
  // per job; this job's own entry is out while the pump serves it).
  uint64_t left = job.Count() - std::min(job.next_unlaunched, job.Count()) + job.retry.size();
  size_t jobs = s_.owner_book.Entries() + 1;
  uint32_t tasks = static_cast<uint32_t>(std::clamp<uint64_t>(std::max<uint64_t>(left, 1) * jobs, 1, UINT32_MAX));
  double pool = FasterPoolFinish(b, d, tasks);
  if (pool < 0) return id;  // nothing faster
  // Speed factors are noisy: on exponential run times a healthy executor's
  // wanders by about +-30% (one sigma of the EWMA of log ratios), more
  // right after its first samples. Hold a task only off an executor the
  // fail-slow detector confirmed (validated, no false alarms per 100k
  // healthy tasks, docs/PREDICTORS.md) that is clearly slower than the
  // pool, and only for a clear gain.
  constexpr double kClearlySlower = 1.5, kMargin = 1.25;
  if (s_.predictors->Health(id).state != NodeHealth::kFailSlow) return id;
  double speed = Speed(id), pool_speed = 0;
  for (int k = 0; k < b; ++k) pool_speed = pools_[k].slots ? BucketSpeed(k) : pool_speed;  // slowest faster bucket
  if (speed < kClearlySlower * pool_speed) return id;
  if (d * speed <= kMargin * pool) return id;
  // The faster pool may sit free, every executor of it advised against (a
  // policy's answer that flipped while it was free: `late`'s slow nodes,
  // the selector's choice): its fastest that fits takes the task, as an
  // advised-against executor does when nothing else is free. Holding the
  // task for it waited for a slot that was already free: with nothing
  // running, no event pumped again (a job never placed: matrix m47).
  if (ExecutorId faster = FastestAvoided(job, t, b)) return faster;
  // Nothing runs in the faster pool either: no slot of it will free, and
  // its free ones did not take the task (another kernel, too little memory,
  // a peer that runs nothing): a hold would wait for an event that never
  // comes (chaos_test: a job never finished beside a rogue executor).
  if (!FasterPoolRuns(b)) return id;
  held_ = true;
  return 0;
}

bool ExpectedFinishPlacement::FasterPoolRuns(int b) const {
  for (int k = 0; k < b; ++k)
    if (pools_[k].live > 0) return true;
  return false;
}

ExecutorId ExpectedFinishPlacement::FastestAvoided(const Job& job, TaskIndex t, int below) {
  for (int k = NextListed(0, true); k < below; k = NextListed(k + 1, true)) {
    Clean(k, true, false);
    size_t looked = 0;  // bounded: a hold costs O(buckets x kAvoidedLook), not O(fleet)
    for (ExecutorId id : List(k, true)) {
      if (++looked > kAvoidedLook) break;
      const ExecutorState* e = Usable(id, k, true) ? s_.FindExec(id) : nullptr;
      if (e && place_.Fits(job, t, *e, false)) return id;
    }
  }
  return 0;
}

bool ExpectedFinishPlacement::AllowsQuarantine(const ExecutorState& e) const {
  return Speed(e.id) >= s_.opt.quarantine_speed_factor;
}

}  // namespace tailcut::core
