// Job dependencies (JobDef::after) and task inputs (TaskDef::inputs),
// docs/JOBS.md "Dependencies": a child job stays queued (Job::waiting_for)
// until every parent has succeeded; a parent that fails or is cancelled ends
// its children with a reason naming it, transitively. Parents whose outputs
// children take as input are kept past core.job_retention until those
// children have finished.
//
// FinishJob only notes a finished parent (NoteFinished); Settle, called by
// the core before each placement pass, moves its children on. So a cascade
// down a long chain is a loop, not a recursion through FinishJob.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tailcut/core/types.h"

namespace tailcut::core {

struct CoreState;
struct Job;
class Lifecycle;
class Placement;

// Parents one job may name (JobDef::after, inputs' jobs included).
inline constexpr size_t kMaxParents = 64;
// Resolved input references of one task (an `all` reference counts each task).
inline constexpr size_t kMaxInputsPerTask = 100'000;
// Bytes of upstream outputs handed to one attempt (they travel in its
// Assignment, under the executors' message limit).
inline constexpr uint64_t kMaxInputBytes = 16u << 20;
// Outcomes of finished jobs evicted by core.job_retention that a child may
// still name (state, reason, owner; oldest dropped first).
inline constexpr size_t kMaxRememberedOutcomes = 100'000;

struct DependencyBook {
  struct Outcome {
    JobState state = JobState::kSucceeded;
    std::string name, reason, owner;
  };
  // Parent -> its children (not yet settled by that parent's end).
  std::unordered_map<JobId, std::vector<JobId>> children;
  // Parent -> unfinished children that take its outputs as input: it is not
  // evicted while > 0.
  std::unordered_map<JobId, uint32_t> pins;
  // Finished jobs with children, in the order they finished (Settle).
  std::deque<JobId> finished;
  // Children to end at once: restored with a parent that failed or is gone.
  std::vector<std::pair<JobId, std::pair<JobState, std::string>>> doomed;
  // Finished jobs past job_retention kept because they are pinned.
  std::vector<JobId> deferred;
  bool unpinned = false;  // a pin dropped to 0 since the last Settle: look at `deferred`
  // Outcomes of evicted jobs (kMaxRememberedOutcomes).
  std::unordered_map<JobId, Outcome> forgotten;
  std::deque<JobId> forgotten_order;
  // Parent -> position in its Job::outputs of each task's output (-1: none),
  // built when a child first resolves an input of it.
  std::unordered_map<JobId, std::vector<int32_t>> output_index;
};

// Submit-time check of `def`'s parents and inputs: every parent known
// (running, finished, or a remembered outcome), the submitter's own
// (same owner), not failed or cancelled, at most kMaxParents; every input's
// job is added to `after` if missing, keeps its outputs (return_outputs or
// output_dir) and has the named task. Cycles cannot form: a parent must
// exist before its child. The message names the parent and the rule.
Status CheckParents(CoreState& s, JobDef& def);
// Registers a job just added (submitted or restored) with its parents:
// fills job.waiting_for with the running ones and pins those it takes
// inputs from. A restored job whose parent failed, was cancelled or is
// unknown is doomed (ended at the next Settle).
void LinkParents(CoreState& s, Job& job);
// A job finished: its children are settled at the next Settle; its pins on
// its own parents are released.
void NoteFinished(CoreState& s, const Job& job);
// Whether Retain may evict the finished job `id` now (not pinned); records
// its outcome for children that name it later.
bool MayEvict(CoreState& s, const Job& job);
// Moves children on: unblocks those whose parents all succeeded, ends those
// a parent failed (transitively), evicts deferred jobs no longer pinned.
// True when anything changed.
bool Settle(CoreState& s, Lifecycle& life, Placement& place);
// The committed outputs task t of `job` takes as input, in order.
Status ResolveInputs(CoreState& s, const Job& job, TaskIndex t, std::vector<ResolvedInput>* out);
// Jobs that unfinished jobs name as parents (the journal keeps them).
std::vector<JobId> ParentsOfUnfinished(const CoreState& s);

}  // namespace tailcut::core
