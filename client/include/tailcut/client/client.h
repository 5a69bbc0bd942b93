// The C++ client API: submit jobs, watch them, read results.
//
//   tailcut::Client c({.endpoint = "tcp://sched:7701"});
//   auto job = c.Submit(tailcut::FanoutJob("sleep", "ms=20", 100));
//   auto done = c.Wait(*job, {.on_progress = [](const wire::JobStatus& s) {...}});
//
// Messages are the protocol's own (wire/proto/tailcut.proto). Not
// thread-safe: use one Client per thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tailcut.pb.h"
#include "tailcut/common/config.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/status.h"

namespace tailcut {

struct ClientOptions {
  // The scheduler's client endpoint, or its replicas' as a comma-separated
  // list (docs/RELIABILITY.md, "Replicas"): a request follows NOT_LEADER to
  // the leader named, and moves on when one does not answer for 2 s.
  std::string endpoint = "tcp://127.0.0.1:7701";
  double timeout_s = 10;                         // per request
  // Keys (docs/SECURITY.md): this client's .key file and the scheduler's
  // public key (.pub file or Z85). Both or neither; needed by a scheduler
  // started with keys. Without keys, `user` (default: the login name) owns
  // the jobs submitted.
  std::string key_file;
  std::string scheduler_key;
  std::string user;
  // ZMQ_MAXMSGSIZE: a larger frame from the scheduler drops the connection
  // (the scheduler sends TOO_LARGE instead of a reply over its own limit).
  uint64_t max_message_bytes = 64u << 20;
};

struct WaitOptions {
  double progress_interval_s = 0.2;                      // status polls while waiting
  std::function<void(const wire::JobStatus&)> on_progress;  // each poll
  std::function<void(const wire::TaskResult&)> on_result;  // streamed results
  double timeout_s = 0;                                  // 0 = wait forever
  // How long to keep asking while the scheduler does not answer (it may be
  // restarting; with its journal the job goes on) before giving up.
  double reconnect_timeout_s = 60;
};

class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sets a fresh JobSpec.request_key unless the job has one, so that the
  // resends of this submit (after a timeout, across a scheduler restart)
  // never create a second job.
  StatusOr<JobId> Submit(const wire::JobSpec& job);
  StatusOr<wire::JobStatus> GetStatus(JobId job);
  StatusOr<wire::JobStatus> Cancel(JobId job);
  // Every registered executor, page by page (ListExecutors; `page`
  // executors a request, 0: the scheduler's largest).
  StatusOr<std::vector<wire::ExecutorInfo>> Executors(uint32_t page = 0);
  // How many are registered: one request, one executor's worth of reply.
  StatusOr<uint64_t> ExecutorCount();
  StatusOr<std::vector<wire::TaskResult>> Results(JobId job);
  // The job's committed attempts the scheduler still holds in memory
  // (scheduler.trace_memory_rows), as trace rows (`tailcut trace`).
  StatusOr<wire::JobTrace> Trace(JobId job);
  // Blocks until the job ends; returns its final status. Results arrive
  // through on_result when the job was submitted with stream_results.
  StatusOr<wire::JobStatus> Wait(JobId job, const WaitOptions& options = {});
  // Submit and Wait in one request (SubmitJob.watch): the scheduler pushes
  // the final status, which carries the job's id. Falls back to Submit then
  // Wait's watch on a scheduler that does not take the watch.
  StatusOr<wire::JobStatus> SubmitAndWait(const wire::JobSpec& job, const WaitOptions& options = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A random idempotency key for JobSpec.request_key (128 bits, hex).
std::string NewRequestKey();

// N copies of one task ("fan-out"): the compact template form on the wire.
wire::JobSpec FanoutJob(const std::string& kernel, const std::string& args, uint32_t tasks);

// Turns a job reference of a file (`after`, an input's JOB) into a job id;
// `key` names the config key in errors.
using JobRefResolver = std::function<StatusOr<uint64_t>(const std::string& text, const std::string& key)>;
// The resolver of job files: a job id (a positive number).
StatusOr<uint64_t> JobIdRef(const std::string& text, const std::string& key);
// The job described by the keys under `prefix` ("" for a job file, "stage.2."
// in a pipeline) of `c`; `path` is the default name. Does not check for
// unknown keys (the caller does, once per file: Config::CheckAllUsed).
StatusOr<wire::JobSpec> JobFromConfig(const Config& c, const std::string& prefix, const std::string& path,
                                      const JobRefResolver& resolve);

// A job from a TOML file (format in docs/JOBS.md and configs/jobs/).
StatusOr<wire::JobSpec> LoadJobFile(const std::string& path);
// The same from TOML text; `origin` stands for the path in errors and is
// the job's default name.
StatusOr<wire::JobSpec> ParseJobFile(std::string_view toml_text, const std::string& origin);

const char* JobStateText(wire::JobState s);
// A scheduler's Error reply as a Status: "message [CODE]".
Status StatusFromWireError(const wire::Error& e);
bool IsTerminal(wire::JobState s);

}  // namespace tailcut
