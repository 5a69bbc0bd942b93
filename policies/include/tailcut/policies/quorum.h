// `quorum`: federated-learning rounds (Bonawitz et al., 2019) as quorum jobs.
//
// The value lies in over-selection: MakeQuorumJob launches
// ceil(over_select x target) clients for a round that closes at `target`
// reports, or at the deadline with at least `min_count`; late reports are
// dropped by the core. The policy itself adds nothing at runtime: copies of
// a quorum task would only compete with the over-selected clients, so the
// speculative policies skip quorum jobs (speculate_coded = false), and the
// `quorum` policy, when in a chain, cancels any redundant copy another
// policy may still have launched for a quorum job (e.g. with
// speculate_coded = true elsewhere) unless `allow_copies` is set.
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/job.h"
#include "tailcut/core/policy.h"

namespace tailcut {

struct QuorumSpec {
  std::string name = "fl-round";
  TaskDef client;            // the per-client task (one per selected client)
  uint32_t target = 0;       // reports that close the round (k)
  double over_select = 1.3;  // clients launched = ceil(over_select x target)
  uint32_t min_count = 0;    // fewest reports that still succeed at the deadline; 0 = target
  double deadline_s = 0;     // after submission; 0 = none
  bool return_outputs = true;
};
// InvalidArgument for target 0, over_select < 1, min_count > target, deadline < 0.
StatusOr<JobDef> MakeQuorumJob(const QuorumSpec& spec);

struct QuorumOptions {
  bool allow_copies = false;
};

class QuorumPolicy final : public MitigationPolicy {
 public:
  explicit QuorumPolicy(QuorumOptions o = {}) : o_(o) {}
  std::string_view name() const override { return "quorum"; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;

 private:
  QuorumOptions o_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeQuorumPolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
