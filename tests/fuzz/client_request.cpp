// The scheduler's client socket: what SchedulerServer does with one
// ClientRequest (scheduler/server/src/server_clients.cpp, OnClientRequest): the job spec
// through JobDefFromWire into SubmitJob (templates expanded there), and
// status, cancel, watch and results on a core with a running job.
#include "core_fixture.h"
#include "fuzz_targets.h"
#include "tailcut/wire/wire.h"
#include "wire_convert.h"

namespace tailcut::fuzz {
namespace {

// A template may ask for up to kMaxTasksPerJob (50M) tasks, which the core
// expands at submit: gigabytes, not a bug the fuzzer should report (the
// limits work caps it before expansion). Larger jobs are left out here.
constexpr uint64_t kFuzzMaxTasks = 4096;

void Submit(CoreFixture& f, const wire::JobSpec& spec) {
  if (static_cast<uint64_t>(spec.tasks_size()) + spec.template_count() > kFuzzMaxTasks) return;
  auto def = JobDefFromWire(spec);
  if (!def.ok()) return;
  auto id = f.core.SubmitJob(std::move(def).value());
  if (!id.ok()) {
    (void)ErrorCodeFor(id.status(), true);
    return;
  }
  f.Turn(0);
  wire::JobStatus out;
  JobStatusToWire(*f.core.JobStatus(*id), &out);
}

void Status(CoreFixture& f, JobId job) {
  auto st = f.core.JobStatus(job);
  wire::JobStatus out;
  if (st.ok()) JobStatusToWire(*st, &out);
}

}  // namespace

int ClientRequest(const uint8_t* data, size_t size) {
  Quiet();
  wire::ClientRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size)) || req.version() != kProtocolVersion) return 0;
  CoreFixture f;
  switch (req.body_case()) {
    case wire::ClientRequest::kSubmit: Submit(f, req.submit().job()); break;
    case wire::ClientRequest::kStatus: Status(f, req.status().job_id()); break;
    case wire::ClientRequest::kCancel: {
      auto s = f.core.CancelJob(req.cancel().job_id(), "cancelled by client");
      if (s.ok()) Status(f, req.cancel().job_id());
      break;
    }
    case wire::ClientRequest::kWatch: Status(f, req.watch().job_id()); break;
    case wire::ClientRequest::kResults: (void)f.core.JobOutputs(req.results().job_id()); break;
    case wire::ClientRequest::kListExecutors: (void)f.core.Executors(); break;
    default: break;
  }
  for (int i = 0; i < 3; ++i) f.Turn(5);
  return 0;
}

}  // namespace tailcut::fuzz
