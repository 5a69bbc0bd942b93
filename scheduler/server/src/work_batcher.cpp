#include "work_batcher.h"

#include <algorithm>
#include <utility>

namespace tailcut {

size_t BatchBudget(uint64_t max_message_bytes) {
  return std::max<size_t>(max_message_bytes, 2 * kMessageHeadroom) - kMessageHeadroom;
}

bool WorkBatcher::Launch(LaunchCmd&& l) {
  if (!l.spec) return false;
  const LaunchSpec& t = *l.spec;
  size_t bytes = t.args.size() + t.kernel.size() + t.output_dir.size() + kItemOverhead;
  for (const LaunchInput& r : t.inputs) bytes += r.output.size() + r.path.size() + kItemOverhead;
  const ExecutorId e = l.executor;
  LaunchToWire(std::move(l), For(e).For(bytes).mutable_work()->add_assign());
  return true;
}

void WorkBatcher::Cancel(const CancelCmd& c) {
  For(c.executor).For(kItemOverhead).mutable_work()->add_cancel(c.attempt);
}

void WorkBatcher::Promote(const PromoteCmd& c, ExecutorId e) {
  wire::Promote* p = For(e).For(c.output_dir.size() + kItemOverhead).mutable_work()->add_promote();
  p->set_job_id(c.job);
  p->set_task_index(c.task);
  p->set_attempt_id(c.attempt);
  p->set_output_dir(c.output_dir);
}

void ClientPusher::Committed(TaskCommittedCmd&& c) {
  auto& batch = results_.try_emplace(c.job, budget_).first->second;
  auto* rs = batch.For(c.output.size() + kItemOverhead).mutable_results();
  rs->set_job_id(c.job);
  TaskCommittedToWire(std::move(c), rs->add_results());
}

}  // namespace tailcut
