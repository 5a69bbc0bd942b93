// tailcut: the command-line tool. One subcommand per verb; see --help.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "tailcut/cli/tool_commands.h"
#include "tailcut/client/client.h"
#include "tailcut/client/pipeline.h"
#include "tailcut/client/progress.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "tailcut/common/version.h"
#include "tailcut/predictors/trace.h"
#include "tailcut/wire/security.h"

namespace tailcut::cli {
namespace {

// The flags' environment variables are bound in ClientFlags (cli_util.cpp).
ClientOptions ClientOptionsFrom(const Args& a) {
  ClientOptions o;
  o.endpoint = a.Get("--scheduler", o.endpoint);
  o.key_file = a.Get("--key-file");
  o.scheduler_key = a.Get("--scheduler-key");
  o.timeout_s = a.Double("--timeout", 10, 0.001, 1e6);  // checked in Checked()
  return o;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "tailcut: %s\n", s.message().c_str());
  return s.code() == Status::Code::kUnavailable ? kExitUnavailable : kExitFailed;
}

void PrintStatus(const wire::JobStatus& s) {
  std::printf("job %llu (%s): %s, %u/%u tasks committed, %u running, %u attempts (%u copies, %u failed)",
              static_cast<unsigned long long>(s.job_id()), s.name().c_str(), JobStateText(s.state()), s.committed(),
              s.tasks(), s.running(), s.attempts(), s.copies(), s.failed_attempts());
  if (s.finished_at_s() > 0) std::printf(", %.3f s", s.finished_at_s() - s.submitted_at_s());
  std::printf("\n");
  if (!s.reason().empty()) std::printf("  reason: %s\n", s.reason().c_str());
  if (s.waiting_for_size() > 0) {
    std::string ids;
    for (uint64_t p : s.waiting_for()) ids += (ids.empty() ? "" : ", ") + std::to_string(p);
    std::printf("  waiting for job%s %s\n", s.waiting_for_size() > 1 ? "s" : "", ids.c_str());
  }
  if (s.copies_refused_side_effects() > 0)
    std::printf("  not copied: %u tasks are not idempotent (submit with --idempotent if running twice is harmless)\n",
                s.copies_refused_side_effects());
  if (s.priority() != 0) std::printf("  priority: %d\n", s.priority());
  if (s.copies_preempted() > 0)
    std::printf("  copies preempted: %u (their slots went to other jobs' first attempts)\n", s.copies_preempted());
}

// Waits with `wait` (Client::Wait or SubmitAndWait) and prints the end.
int WaitAndReport(const Args& a, const std::function<StatusOr<wire::JobStatus>(const WaitOptions&)>& wait) {
  SteadyClock clock;
  WaitOptions w;
  bool json = a.Has("--json");
  ProgressPrinter progress;  // a bar on a terminal, plain lines otherwise
  w.on_progress = [&](const wire::JobStatus& s) {
    if (!json)
      progress.Update("job " + std::to_string(s.job_id()), {s.committed(), s.tasks(), s.copies(), clock.Now()});
  };
  auto st = wait(w);
  progress.End();
  if (!st.ok()) return Fail(st.status());
  if (json) {
    std::printf("%s\n", ToJson(*st).c_str());
  } else {
    PrintStatus(*st);
  }
  return st->state() == wire::JOB_SUCCEEDED ? kExitOk : kExitFailed;
}

// `tailcut submit PIPELINE.toml`: every stage, parents first; prints each
// stage's job id.
int SubmitPipelineFile(const Args& a, const std::string& path) {
  auto p = LoadPipelineFile(path);
  if (!p.ok()) {
    std::fprintf(stderr, "tailcut: %s\n", p.status().message().c_str());
    return kExitUsage;
  }
  Client client(ClientOptionsFrom(a));
  std::vector<PipelineJob> jobs;
  Status s = SubmitPipeline(client, *p, &jobs, a.Get("--run", ""));
  for (const PipelineJob& j : jobs)
    if (!a.Has("--json")) std::printf("stage %s: job %llu\n", j.stage.c_str(), static_cast<unsigned long long>(j.job));
  if (a.Has("--json")) {
    std::string out = "{\"pipeline\": \"" + p->name + "\", \"stages\": [";
    for (size_t i = 0; i < jobs.size(); ++i)
      out += (i ? ", " : "") + std::string("{\"stage\": \"") + jobs[i].stage +
             "\", \"job_id\": " + std::to_string(jobs[i].job) + "}";
    std::printf("%s]}\n", out.c_str());
  }
  if (!s.ok()) {
    std::fprintf(stderr, "tailcut: stage '%s': %s\n", p->stages[jobs.size()].name.c_str(), s.message().c_str());
    return s.code() == Status::Code::kUnavailable ? kExitUnavailable : kExitFailed;
  }
  if (!a.Has("--wait")) return kExitOk;
  std::fflush(stdout);  // the ids before the wait's progress
  int rc = kExitOk;
  for (const PipelineJob& j : jobs)
    rc = std::max(rc, WaitAndReport(a, [&](const WaitOptions& w) { return client.Wait(j.job, w); }));
  return rc;
}

// "--after 3,4": job ids.
bool ParseAfter(const std::string& list, wire::JobSpec* job) {
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    std::string item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    auto id = JobIdRef(item, "--after");
    if (!id.ok()) {
      std::fprintf(stderr, "tailcut submit: %s\n", id.status().message().c_str());
      return false;
    }
    job->add_after(*id);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return true;
}

int Submit(const Args& a) {
  wire::JobSpec job;
  if (!a.positional().empty() && IsPipelineFile(a.positional()[0])) return SubmitPipelineFile(a, a.positional()[0]);
  if (!a.positional().empty()) {
    auto j = LoadJobFile(a.positional()[0]);
    if (!j.ok()) {
      std::fprintf(stderr, "tailcut: %s\n", j.status().message().c_str());
      return kExitUsage;
    }
    job = *j;
  } else if (a.Has("--kernel")) {
    int64_t tasks = a.Int("--tasks", 1, 1, UINT32_MAX);
    int64_t gpus = a.Int("--gpus", 0, 0, UINT32_MAX);  // the scheduler says what is too many
    int64_t memory_mb = a.Int("--memory-mb", 0, 0, static_cast<int64_t>(kMaxMemoryMb));
    int64_t k = a.Int("--k", 0, 1, tasks);
    if (!a.error().empty()) {
      std::fprintf(stderr, "tailcut submit: %s\n", a.error().c_str());
      return kExitUsage;
    }
    job = FanoutJob(a.Get("--kernel"), a.Get("--args"), static_cast<uint32_t>(tasks));
    job.mutable_template_()->mutable_demand()->set_gpus(static_cast<uint32_t>(gpus));
    job.mutable_template_()->mutable_demand()->set_memory_mb(static_cast<uint64_t>(memory_mb));
    if (a.Has("--k")) {
      job.mutable_rule()->set_kind(wire::CompletionRule::K_OF_N);
      job.mutable_rule()->set_k(static_cast<uint32_t>(k));
    }
  } else {
    std::fprintf(stderr, "tailcut: submit needs a job file or --kernel (try tailcut submit --help)\n");
    return kExitUsage;
  }
  if (a.Has("--name")) job.set_name(a.Get("--name"));
  if (a.Has("--idempotent") && a.Has("--not-idempotent")) {
    std::fprintf(stderr, "tailcut submit: --idempotent and --not-idempotent contradict each other\n");
    return kExitUsage;
  }
  if (a.Has("--idempotent") || a.Has("--not-idempotent")) job.set_idempotent(a.Has("--idempotent"));
  if (a.Has("--output-dir")) job.set_output_dir(a.Get("--output-dir"));
  if (a.Has("--after") && !ParseAfter(a.Get("--after"), &job)) return kExitUsage;
  if (a.Has("--priority")) {
    int64_t priority = a.Int("--priority", 0, -1000, 1000);
    if (!a.error().empty()) {
      std::fprintf(stderr, "tailcut submit: %s\n", a.error().c_str());
      return kExitUsage;
    }
    job.set_priority(static_cast<int32_t>(priority));
  }
  Client client(ClientOptionsFrom(a));
  // One request: the submit watches the job (Client::SubmitAndWait).
  if (a.Has("--wait")) return WaitAndReport(a, [&](const WaitOptions& w) { return client.SubmitAndWait(job, w); });
  auto id = client.Submit(job);
  if (!id.ok()) return Fail(id.status());
  if (a.Has("--json")) {
    // Not JobSubmitted's JSON: its `watching` is the client's business.
    std::printf("{\"job_id\":%llu,\"tasks\":%u}\n", static_cast<unsigned long long>(*id),
                static_cast<unsigned>(job.tasks_size()) + job.template_count());
  } else {
    std::printf("submitted job %llu\n", static_cast<unsigned long long>(*id));
  }
  return kExitOk;
}

bool JobArg(const Args& a, JobId* id) {
  char* end = nullptr;
  *id = std::strtoull(a.positional()[0].c_str(), &end, 10);
  if (*end != '\0' || *id == 0) {
    std::fprintf(stderr, "tailcut: '%s' is not a job id\n", a.positional()[0].c_str());
    return false;
  }
  return true;
}

// `status` and `cancel`: one job id in, the job's status out.
int JobStatusVerb(const Args& a, StatusOr<wire::JobStatus> (Client::*call)(JobId)) {
  JobId id;
  if (!JobArg(a, &id)) return kExitUsage;
  Client client(ClientOptionsFrom(a));
  auto s = (client.*call)(id);
  if (!s.ok()) return Fail(s.status());
  if (a.Has("--json")) {
    std::printf("%s\n", ToJson(*s).c_str());
  } else {
    PrintStatus(*s);
  }
  return kExitOk;
}

int StatusCmd(const Args& a) { return JobStatusVerb(a, &Client::GetStatus); }
int CancelCmd(const Args& a) { return JobStatusVerb(a, &Client::Cancel); }

int ResultsCmd(const Args& a) {
  JobId id;
  if (!JobArg(a, &id)) return kExitUsage;
  Client client(ClientOptionsFrom(a));
  auto r = client.Results(id);
  if (!r.ok()) return Fail(r.status());
  wire::TaskResults all;
  all.set_job_id(id);
  for (auto& x : *r) *all.add_results() = x;
  if (a.Has("--json")) {
    std::printf("%s\n", ToJson(all).c_str());
  } else {
    std::vector<wire::TaskResult> rows(r->begin(), r->end());
    std::stable_sort(rows.begin(), rows.end(), [](const wire::TaskResult& x, const wire::TaskResult& y) {
      return x.task_index() < y.task_index();
    });
    for (const wire::TaskResult& x : rows) {
      std::string out = x.output();
      while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
      std::printf("task %u  executor %llu  %.4f s  %s\n", x.task_index(),
                  static_cast<unsigned long long>(x.executor_id()), x.run_s(), out.c_str());
    }
  }
  return kExitOk;
}

int TraceCmd(const Args& a) {
  JobId id;
  if (!JobArg(a, &id)) return kExitUsage;
  Client client(ClientOptionsFrom(a));
  auto t = client.Trace(id);
  if (!t.ok()) return Fail(t.status());
  if (t->attempts().empty()) {
    std::fprintf(stderr, "tailcut trace: no committed attempts of job %llu are held%s\n",
                 static_cast<unsigned long long>(id),
                 t->ring_rows() == 0 ? " (scheduler.trace_memory_rows = 0: the in-memory trace is off)"
                 : t->committed() == 0 ? " (none committed yet)"
                                       : " (overwritten by newer rows, or committed before a scheduler restart)");
    return kExitFailed;
  }
  if (static_cast<uint64_t>(t->attempts_size()) < t->committed())
    std::fprintf(stderr,
                 "tailcut trace: warning: %d of job %llu's %u committed attempts are still held (the scheduler keeps "
                 "the newest %llu rows); the rest were overwritten or committed before a restart\n",
                 t->attempts_size(), static_cast<unsigned long long>(id), t->committed(),
                 static_cast<unsigned long long>(t->ring_rows()));
  std::string text;
  if (a.Has("--json")) {
    text = ToJson(*t) + "\n";
  } else {
    text = std::string(kTraceHeader) + "\n# job " + std::to_string(id) + " (" + JobStateText(t->state()) + "), " +
           std::to_string(t->attempts_size()) + " of " + std::to_string(t->committed()) +
           " committed attempts, times in seconds on the scheduler's clock\n";
    if (auto list = client.Executors(); list.ok())  // only those registered now have a name
      for (const wire::ExecutorInfo& e : *list) {
        std::string name = e.name();  // a peer's text: one comment line, whatever it holds
        std::replace_if(name.begin(), name.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
        text += "# executor " + std::to_string(e.executor_id()) + " = " + name + "\n";
      }
    for (const wire::TraceAttempt& x : t->attempts()) {
      TraceRow row;
      row.job = id;
      row.task = x.task();
      row.executor = x.executor();
      row.start = x.start_s();
      row.end = x.end_s();
      row.task_class = x.task_class();
      row.input_size = x.input_size();
      text += FormatTraceRow(row);
    }
  }
  const std::string out = a.Get("-o", "");
  if (out.empty()) return std::fputs(text.c_str(), stdout) < 0 ? kExitFailed : kExitOk;
  std::FILE* f = std::fopen(out.c_str(), "wb");
  bool written = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f && std::fclose(f) != 0) written = false;
  if (!written) return Fail(Status::IoError("cannot write " + out));
  std::fprintf(stderr, "tailcut trace: wrote %d rows of job %llu to %s\n", t->attempts_size(),
               static_cast<unsigned long long>(id), out.c_str());
  return kExitOk;
}

const char* HealthText(const wire::ExecutorInfo& e) {
  if (e.quarantined()) return "quarantined";
  switch (e.health().state()) {
    case wire::ExecutorHealth::SUSPECT: return "suspect";
    case wire::ExecutorHealth::FAIL_SLOW: return "fail_slow";  // NodeHealthName's spelling
    case wire::ExecutorHealth::RECOVERED: return "recovered";
    default: return "healthy";
  }
}

int ExecutorsCmd(const Args& a) {
  Client client(ClientOptionsFrom(a));
  auto r = client.Executors();
  if (!r.ok()) return Fail(r.status());
  if (a.Has("--json")) {
    wire::ExecutorList l;
    for (auto& e : *r) *l.add_executors() = e;
    std::printf("%s\n", ToJson(l).c_str());
    return kExitOk;
  }
  std::printf("%-4s %-24s %5s %4s %7s %9s %-11s %6s %9s\n", "ID", "NAME", "SLOTS", "GPUS", "RUNNING", "FINISHED",
              "HEALTH", "SPEED", "SEEN");
  for (auto& e : *r)
    std::printf("%-4llu %-24s %5u %4u %7u %9llu %-11s %5.2fx %7.1fs\n", static_cast<unsigned long long>(e.executor_id()),
                e.name().c_str(), e.cpu_slots(), e.gpus(), e.running(), static_cast<unsigned long long>(e.finished()),
                HealthText(e), e.health().speed_factor(), e.last_seen_s_ago());
  if (r->empty()) std::printf("(no executors registered)\n");
  return kExitOk;
}

int KeygenCmd(const Args& a) {
  const std::string& name = a.positional()[0];
  bool plain = !name.empty() && name[0] != '.' && name.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
  if (!plain)
    return std::fprintf(stderr, "tailcut keygen: NAME is a file name: letters, digits, '.', '_', '-'\n"), kExitUsage;
  auto role = ParsePeerRole(a.Get("--role", "client"));
  if (!role.ok()) return std::fprintf(stderr, "tailcut keygen: %s\n", role.status().message().c_str()), kExitUsage;
  auto key = GenerateKeyPair(name, *role);
  if (!key.ok()) return Fail(key.status());
  const std::string dir = a.Get("--dir", ".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(Status::IoError("cannot create " + dir + ": " + ec.message()));
  std::string prefix = dir + "/" + name;
  if (Status s = WriteKeyFiles(prefix, *key); !s.ok()) return Fail(s);
  std::printf("wrote %s.key (secret, mode 0600) and %s.pub (role %s)\n", prefix.c_str(), prefix.c_str(),
              PeerRoleName(*role));
  if (*role == PeerRole::kAdmin)
    std::printf(
        "the scheduler's own key? give %s.pub to executors and clients (--scheduler-key, TAILCUT_SCHEDULER_KEY) "
        "and do not add it to trusted_keys.\nan operator's key? append %s.pub to the scheduler's trusted_keys file "
        "and send it SIGHUP\n",
        prefix.c_str(), prefix.c_str());
  else
    std::printf("admit it: append %s.pub to the scheduler's trusted_keys file and send it SIGHUP\n", prefix.c_str());
  return kExitOk;
}

// Client commands check --timeout before they run.
std::function<int(const Args&)> Checked(int (*run)(const Args&), const char* name) {
  return [run, name](const Args& a) {
    (void)ClientOptionsFrom(a);
    if (!a.error().empty()) {
      std::fprintf(stderr, "tailcut %s: %s\n", name, a.error().c_str());
      return kExitUsage;
    }
    return run(a);
  };
}

std::vector<Flag> With(std::vector<Flag> flags, const std::vector<Flag>& more) {
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

const Positional kJob = {"JOB", "the job's id (tailcut submit prints it)"};

std::vector<Command> ClientCommands() {
  std::vector<Command> c;
  c.push_back({"submit",
               "submit a job (a TOML job file, or --kernel/--tasks flags), or a pipeline file's stages",
               "Submits a job. With no file, the flags describe a fan-out of identical tasks. A job file "
               "(docs/JOBS.md) or a pipeline file ([[stage]] tables) sets the same things; flags given with a file "
               "change its name, priority, idempotence, output directory and parents.",
               "exit codes: 0 submitted (with --wait: succeeded), 1 refused or failed, 2 bad usage or job file, "
               "3 no scheduler answered",
               With({{"--kernel", "NAME",
                      "kernel of every task (noop, sleep, spin, matmul, ...; shell only on executors started with "
                      "--allow-shell). Each kernel takes the arguments it declares (docs/KERNELS.md)"},
                     {"--args", "TEXT",
                      "kernel arguments, e.g. \"ms=50 sigma=0.3\"; {index} and {count} become each task's index and "
                      "the task count"},
                     {"--tasks", "N", "number of tasks (default 1)"},
                     {"--idempotent", "",
                      "running a task twice is harmless: allow copies, clones, hedges and restarts (default for the "
                      "pure built-ins, not for shell and exec: docs/POLICIES.md, \"Side effects\")"},
                     {"--not-idempotent", "", "never copy or restart a running task of this job"},
                     {"--k", "K", "finish when any K tasks commit (k_of_n); default: all"},
                     {"--gpus", "G", "GPUs per task (default 0), each its own devices"},
                     {"--memory-mb", "MB",
                      "memory each task holds while it runs (MiB; placement and program tasks' enforcement: "
                      "docs/JOBS.md, \"Memory\")"},
                     {"--name", "NAME", "job name"},
                     {"--priority", "N",
                      "orders your own jobs, higher first (-1000..1000, default 0; across owners the fair share "
                      "decides: docs/POLICIES.md, \"Owners\")"},
                     {"--output-dir", "DIR",
                      "each task's files: the committed attempt's directory becomes DIR/task-<index> (absolute; "
                      "docs/JOBS.md)"},
                     {"--after", "ID,...",
                      "run after these jobs: queued until every one succeeded, failed (or cancelled) with them "
                      "(docs/JOBS.md)"},
                     {"--run", "NAME",
                      "a pipeline file: tells runs of the same file apart (the same file and run submitted again "
                      "returns the same jobs)"},
                     {"--wait", "",
                      "wait for the job (every stage of a pipeline), with a progress bar; exit 1 if it "
                      "fails"}},
                    ClientFlags()),
               {{"JOB.toml", "a job file or a pipeline file (else --kernel)", false}},
               false,
               Checked(Submit, "submit")});
  c.push_back({"status",
               "show a job's state",
               "Shows a job's state: tasks committed, running, attempts, copies.",
               "",
               ClientFlags(),
               {kJob},
               false,
               Checked(StatusCmd, "status")});
  c.push_back({"cancel",
               "cancel a job",
               "Cancels a job and shows its state.",
               "",
               ClientFlags(),
               {kJob},
               false,
               Checked(CancelCmd, "cancel")});
  c.push_back({"results",
               "committed outputs of a job submitted with return_outputs",
               "Prints a job's committed outputs, one row per task in task order: task index, executor, run time, "
               "output (its trailing line breaks dropped; --json keeps them).",
               "",
               ClientFlags(),
               {kJob},
               false,
               Checked(ResultsCmd, "results")});
  c.push_back({"trace",
               "a job's committed attempts as an attempt trace (CSV) for whatif and predict-eval",
               "Writes a job's committed attempts as an attempt trace (docs/TRACE_FORMAT.md) for `tailcut whatif` "
               "and `tailcut predict-eval`: one row per committed task, times on the scheduler's clock, a comment "
               "line naming each executor. The scheduler holds the newest scheduler.trace_memory_rows rows of all "
               "jobs in memory (default 65536); an older job's overwritten rows are gone (a warning says how many "
               "are left). To keep every row, record to a file with scheduler.trace_path (docs/WHATIF.md).",
               "exit codes: 0 written, 1 no rows held for the job or the request was refused, 2 bad usage, 3 no "
               "scheduler answered",
               With({{"-o", "FILE", "write the trace to FILE (default: standard output)"}}, ClientFlags()),
               {kJob},
               false,
               Checked(TraceCmd, "trace")});
  c.push_back({"executors",
               "list executors with their load and health",
               "Lists the executors with their slots, load, health (healthy/suspect/fail_slow/quarantined) and "
               "measured speed.",
               "",
               ClientFlags(),
               {},
               false,
               Checked(ExecutorsCmd, "executors")});
  return c;
}

}  // namespace
}  // namespace tailcut::cli

int main(int argc, char** argv) {
  using namespace tailcut::cli;
  tailcut::TuneAllocatorForMessages();  // the CLI hosts schedulers too (demo, train, bench)
  tailcut::SetLogComponent("tailcut");
  std::vector<Command> commands = ClientCommands();
  commands.push_back(PredictEvalCommand("predict-eval"));
  commands.push_back(TraceGenCommand("trace-gen"));
  for (Command c : {SimCommand(), BenchCommand(), WhatifCommand(), TrainCommand(), DemoCommand()})
    commands.push_back(std::move(c));
  commands.push_back(
      {"keygen",
       "write a CURVE key pair NAME.key (secret) and NAME.pub",
       "Writes a CURVE key pair: NAME.key (secret, mode 0600) and NAME.pub, for a scheduler, an executor or a "
       "client (docs/SECURITY.md).",
       "",
       {{"--role", "ROLE", "client (default), executor, or admin (acts on every job; also the scheduler's own key)"},
        {"--dir", "DIR", "where to write the files (default .)"}},
       {{"NAME", "the files' name: letters, digits, '.', '_', '-'"}},
       false,
       KeygenCmd});
  if (argc == 2 && std::string(argv[1]) == "help") argv[1] = const_cast<char*>("--help");
  return RunCommands("tailcut",
                     "tailcut: submit jobs to a tailcut scheduler, inspect them, and run the simulator, the benchmarks "
                     "and the demo. Help for a command: tailcut COMMAND --help.",
                     "Every client command reads TAILCUT_SCHEDULER, TAILCUT_KEY_FILE and TAILCUT_SCHEDULER_KEY "
                     "when its flag is not given.\nexit codes: 0 ok, 1 the job failed or the request was refused, "
                     "2 bad usage, 3 no scheduler answered",
                     commands, argc, argv, tailcut::VersionLine("tailcut"));
}
