// The edges of the simulator's two tiers (`[cluster.edges]`, docs/EDGE.md
// "Two tiers"): how the top core's launches reach an edge, which runs each
// as a one-task job on its own core over its devices and reports back over
// the link, as the live edge (the scheduler server's parent link) does. The
// loop and the devices are the one tier's (simulator.cpp, sim_loop.h).
#include <algorithm>
#include <string>
#include <vector>

#include "sim_loop.h"
#include "tailcut/common/log.h"

namespace tailcut::sim::loop {
namespace {

constexpr const char* kEdgeFailedWhy = "the edge's job ended without a commit (simulated)";

}  // namespace

void Loop::SetupEdges(std::vector<PolicyChain> chains, const std::vector<double>& speeds) {
  const EdgeTierModel& et = sc_.cluster.edges;
  chains.resize(et.count);  // edges without a chain given run none
  edges_.resize(et.count);
  fleets_.resize(et.count);
  for (uint32_t e = 0; e < et.count; ++e) {
    Edge& edge = edges_[e];
    edge.core = std::make_unique<SchedulerCore>(sc_.core, &clock_, std::move(chains[e]),
                                                std::make_unique<PredictorSuite>(sc_.predictor));
    edge.quorum = std::make_unique<EdgeQuorum>(et.edge_quorum);
    cores_.push_back(CoreRef{edge.core.get()});
    Fleet& f = fleets_[e];
    f.core = edge.core.get();
    f.first = e * et.executors_per_edge;
    f.execs.resize(et.executors_per_edge);
    for (uint32_t d = 0; d < et.executors_per_edge; ++d) {
      ExecutorDesc desc;
      desc.name = "edge" + std::to_string(e) + "-dev" + std::to_string(d);
      desc.host = "sim";
      desc.slots = sc_.cluster.slots;
      desc.memory_mb = sc_.cluster.memory_mb;
      desc.gpus = sc_.cluster.gpus;
      desc.kernels = {kSimKernel};
      f.execs[d].speed = speeds[f.first + d];
      f.execs[d].id = edge.core->AddExecutor(desc);
      f.index[f.execs[d].id] = d;
    }
    // The top core sees the edge as one executor offering its whole fleet.
    ExecutorDesc desc;
    desc.name = "edge" + std::to_string(e);
    desc.host = "sim";
    desc.slots = et.executors_per_edge * sc_.cluster.slots;
    desc.gpus = et.executors_per_edge * sc_.cluster.gpus;  // as a live edge sums its fleet's; memory it does not say
    desc.kernels = {kSimKernel};
    edge.top_id = top_.AddExecutor(desc);
    edge_of_[edge.top_id] = e;
  }
}

// The top core's launches and cancels cross the link to their edge.
void Loop::ToEdge(const Command& c) {
  if (auto* l = std::get_if<LaunchCmd>(&c)) {
    if (l->copy) ++result_.copies;
    auto it = edge_of_.find(l->executor);
    if (it == edge_of_.end()) return;
    to_edge_[l->attempt] = TopLaunch{it->second, l->job, l->task, l->share};
    Push(Ev::kEdgeReceive, clock_.Now() + Link(), l->attempt, 0, 0, it->second);
  } else if (auto* x = std::get_if<CancelCmd>(&c)) {
    auto it = edge_of_.find(x->executor);
    if (it != edge_of_.end()) Push(Ev::kEdgeCancel, clock_.Now() + Link(), x->attempt, 0, 0, it->second);
  }
}

void Loop::OnEdgeCommand(uint32_t e, const Command& c) {
  Edge& edge = edges_[e];
  if (auto* l = std::get_if<LaunchCmd>(&c)) {
    Origin o;
    if (auto p = edge.by_local_job.find(l->job); p != edge.by_local_job.end()) {
      const Held& h = edge.held.at(p->second);
      o = Origin{h.job, h.task, h.share, p->second};
    }
    Launch(e, *l, o);
  } else if (auto* x = std::get_if<CancelCmd>(&c)) {
    CancelOn(e, x->attempt);
  } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
    auto p = edge.by_local_job.find(tc->job);
    if (p == edge.by_local_job.end()) return;
    AttemptId top = p->second;
    JobId job = edge.held.at(top).job;
    Push(Ev::kParentResult, clock_.Now() + Link(), top, tc->run_s);
    edge.quorum->Committed(job);
    Forget(edge, top);
    MaybeClose(e, job);
  } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
    auto p = edge.by_local_job.find(f->job);
    if (p == edge.by_local_job.end()) return;  // committed, or cancelled by the top core
    AttemptId top = p->second;
    Forget(edge, top);
    TC_LOG(Debug) << kEdgeFailedWhy << ": " << f->reason;
    Push(Ev::kParentDropped, clock_.Now() + Link(), top);
  }
}

void Loop::Forget(Edge& edge, AttemptId top) {
  auto it = edge.held.find(top);
  if (it == edge.held.end()) return;
  edge.by_local_job.erase(it->second.local);
  edge.quorum->Released(it->second.job);
  edge.held.erase(it);
}

// The edge quorum (tailcut/core/edge_quorum.h): the rest of the job's
// tasks held here are cancelled here and handed back.
void Loop::MaybeClose(uint32_t e, JobId job) {
  Edge& edge = edges_[e];
  if (!edge.quorum->Close(job)) return;
  std::vector<AttemptId> rest;
  for (auto& [top, h] : edge.held)
    if (h.job == job) rest.push_back(top);
  std::sort(rest.begin(), rest.end());  // unordered_map order must not leak into the run
  for (AttemptId top : rest) {
    JobId local = edge.held.at(top).local;
    Forget(edge, top);
    (void)edge.core->CancelJob(local, kQuorumWhy);
    Push(Ev::kParentDropped, clock_.Now() + Link(), top);
  }
}

// A top launch reaches its edge: a one-task job there, running the top
// job's share as is when it has one (as TaskSpec.share does live).
void Loop::EdgeReceive(uint32_t e, AttemptId top) {
  auto it = to_edge_.find(top);
  if (it == to_edge_.end()) return;  // cancelled before it arrived
  const TopLaunch tl = it->second;
  to_edge_.erase(it);
  auto ji = jobs_.find(tl.job);
  if (ji == jobs_.end()) return;  // the top job ended meanwhile
  Edge& edge = edges_[e];
  JobDef def;
  def.name = "parent task";
  def.templ.kernel = kSimKernel;
  def.templ.task_class = sc_.workload.classes[ji->second.cls].name;
  def.templ.share = tl.share;
  def.templ.memory_mb = sc_.workload.classes[ji->second.cls].memory_mb;
  def.templ.gpus = sc_.workload.classes[ji->second.cls].gpus;
  def.template_count = 1;
  def.stream_results = true;
  auto id = edge.core->SubmitJob(std::move(def));
  if (!id.ok()) {
    Push(Ev::kParentDropped, clock_.Now() + Link(), top);
    return;
  }
  edge.held[top] = Held{*id, tl.job, tl.task, tl.share, false};
  edge.by_local_job[*id] = top;
  edge.quorum->Received(tl.job);
}

void Loop::EdgeCancel(uint32_t e, AttemptId top) {
  to_edge_.erase(top);  // still on its way: it will not start
  Edge& edge = edges_[e];
  auto it = edge.held.find(top);
  if (it == edge.held.end()) return;
  JobId local = it->second.local;
  Forget(edge, top);
  (void)edge.core->CancelJob(local, "cancelled by the parent (simulated)");
}

// A device started an attempt of a top attempt held here: the first start
// is reported up.
void Loop::EdgeStarted(uint32_t e, AttemptId top) {
  Edge& edge = edges_[e];
  if (auto h = edge.held.find(top); h != edge.held.end() && !h->second.started) {
    h->second.started = true;
    Push(Ev::kParentStarted, clock_.Now() + Link(), top);
  }
}

}  // namespace tailcut::sim::loop
