// Pipeline files (docs/JOBS.md, "Pipelines"): several stages in one TOML
// file, `[[stage]]` tables with a `name`, `after = ["other-stage"]`, task
// `inputs = ["other-stage:*"]` and the usual job keys. Each stage becomes a
// job run after the stages it names; SubmitPipeline submits them parents
// first under request keys derived from the pipeline and the stage, so
// submitting the same file again (after a crash of the client or the
// scheduler) returns the same jobs instead of running the stages twice.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tailcut/client/client.h"

namespace tailcut {

// The most stages one pipeline file may hold.
inline constexpr size_t kMaxPipelineStages = 256;

struct PipelineStage {
  std::string name;
  // after and inputs name stages as (index + 1) until SubmitPipeline puts
  // the stages' job ids in.
  wire::JobSpec spec;
  std::vector<size_t> after;  // indexes of the stages it runs after (inputs' included)
};

struct Pipeline {
  std::string name;
  std::vector<PipelineStage> stages;  // parents before children
  std::string digest;                 // of the file's text: part of the request keys
};

// Whether TOML text describes a pipeline (has [[stage]] tables).
bool IsPipelineFile(const std::string& path);
StatusOr<Pipeline> LoadPipelineFile(const std::string& path);
StatusOr<Pipeline> ParsePipeline(std::string_view toml_text, const std::string& origin);

struct PipelineJob {
  std::string stage;
  JobId job = 0;
};
// Submits every stage, parents first, into `submitted`; `run` (optional)
// tells runs of the same file apart. Stops at the first refusal: the stage
// that failed is p.stages[submitted->size()]; the stages submitted so far
// stay, and submitting again continues where it stopped.
Status SubmitPipeline(Client& client, const Pipeline& p, std::vector<PipelineJob>* submitted,
                      const std::string& run = "");

}  // namespace tailcut
