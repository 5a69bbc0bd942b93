#include "tailcut/client/client.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <deque>
#include <random>
#include <unordered_map>

#include <pwd.h>
#include <unistd.h>

#include <zmq.hpp>

#include "tailcut/common/clock.h"
#include "tailcut/common/config.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/kernel_args.h"
#include "tailcut/wire/security.h"
#include "tailcut/wire/wire.h"

namespace tailcut {

const char* JobStateText(wire::JobState s) {
  switch (s) {
    case wire::JOB_QUEUED: return "queued";
    case wire::JOB_RUNNING: return "running";
    case wire::JOB_SUCCEEDED: return "succeeded";
    case wire::JOB_FAILED: return "failed";
    case wire::JOB_CANCELLED: return "cancelled";
    default: return "unknown";
  }
}

namespace {
std::string LoginName() {
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) return pw->pw_name;
  return "uid" + std::to_string(geteuid());
}

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}
}  // namespace

Status StatusFromWireError(const wire::Error& e) {
  std::string code = wire::Error::Code_Name(e.code());
  std::string msg = e.message() + " [" + code + "]";
  switch (e.code()) {
    case wire::Error::UNKNOWN_JOB: return Status::NotFound(msg);
    case wire::Error::NOT_YOUR_JOB:
    case wire::Error::UNAUTHENTICATED: return Status::PermissionDenied(msg);
    case wire::Error::UNKNOWN_KERNEL: return Status::NotFound(msg);
    case wire::Error::INFEASIBLE: return Status::FailedPrecondition(msg);
    case wire::Error::BUSY: return Status::ResourceExhausted(msg);  // a cap that frees up: retry later
    case wire::Error::TOO_LARGE: return Status::TooLarge(msg);
    case wire::Error::NOT_LEADER:
      return Status::Unavailable(msg);  // a replica that does not lead: the message names the one that does
    case wire::Error::INVALID_ARGUMENT:
    case wire::Error::BAD_MESSAGE:
    case wire::Error::VERSION_MISMATCH: return Status::InvalidArgument(msg);
    default: return Status::Internal(msg);
  }
}

bool IsTerminal(wire::JobState s) {
  return s == wire::JOB_SUCCEEDED || s == wire::JOB_FAILED || s == wire::JOB_CANCELLED;
}

class Client::Impl {
 public:
  explicit Impl(ClientOptions o) : opt_(std::move(o)), sock_(ctx_, zmq::socket_type::dealer) {
    sock_.set(zmq::sockopt::linger, 0);
    sock_.set(zmq::sockopt::sndhwm, 0);
    sock_.set(zmq::sockopt::rcvhwm, 0);
    if (opt_.user.empty()) opt_.user = LoginName();
    sock_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(opt_.max_message_bytes));
    connect_status_ = ValidateEndpoints(opt_.endpoint);
    endpoints_ = SplitEndpoints(opt_.endpoint);
    if (connect_status_.ok()) connect_status_ = ApplyPeerKeys(sock_, {opt_.key_file, opt_.scheduler_key});
    if (connect_status_.ok()) {
      try {
        handshake_ = std::make_unique<HandshakeMonitor>(ctx_, sock_, !opt_.key_file.empty());
        sock_.connect(endpoints_[current_]);
      } catch (const zmq::error_t& e) {
        connect_status_ = Status::InvalidArgument("cannot connect to " + opt_.endpoint + ": " + e.what());
      }
    }
  }

  // Replicas (docs/RELIABILITY.md, "Replicas"): talks to endpoints_[next]
  // from now on. One connection at a time: a DEALER would spread requests
  // over all it is connected to.
  void MoveTo(size_t next) {
    try {
      sock_.disconnect(endpoints_[current_]);
    } catch (const zmq::error_t&) {  // not connected: nothing to undo
    }
    current_ = next;
    sock_.connect(endpoints_[current_]);
  }

  // Sends `req` and returns the reply with the same request id. Pushed
  // messages for watched jobs that arrive meanwhile are queued. Every
  // request is safe to repeat (submits carry a request key), so it is sent
  // again each kResendS without an answer: a scheduler that restarted in
  // the meantime lost the first copy.
  StatusOr<wire::ClientReply> Call(wire::ClientRequest req) {
    static constexpr double kResendS = 1.0;
    if (!connect_status_.ok()) return connect_status_;
    req.set_version(kProtocolVersion);
    req.set_request_id(++next_request_);
    req.set_user(opt_.user);
    zmq::message_t frame = ToFrame(req);
    // The scheduler would drop the connection, not answer (ZMQ_MAXMSGSIZE).
    if (frame.size() > opt_.max_message_bytes)
      return Status::TooLarge("request of " + std::to_string(frame.size()) + " bytes exceeds max_message_bytes = " +
                              std::to_string(opt_.max_message_bytes) + " (the scheduler's limit)");
    double now = clock_.Now(), deadline = now + opt_.timeout_s, resend = now + kResendS;
    sock_.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::none);
    std::string trouble;  // handshakes that keep failing for no definite reason: said on timeout
    int unanswered = 0;   // resends so far
    while (true) {
      now = clock_.Now();
      bool definitive = false;
      if (std::string why = handshake_->TakeFailure(&definitive); !why.empty()) {
        if (definitive) return Status::PermissionDenied(why);
        trouble = std::move(why);  // the scheduler may be restarting: keep trying
      }
      if (now >= deadline)
        return Status::Unavailable("no answer from the scheduler at " + opt_.endpoint + " within " +
                                   FormatSeconds(opt_.timeout_s) + " s" +
                                   (trouble.empty() ? " (is tailcut-scheduler running there?)" : ": " + trouble));
      if (now >= resend) {
        // Replicas: a second second without an answer, try the next one.
        if (endpoints_.size() > 1 && ++unanswered % 2 == 0) MoveTo((current_ + 1) % endpoints_.size());
        sock_.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::none);
        resend = now + kResendS;
      }
      wire::ClientReply reply;
      if (!ReceiveOne(std::min(deadline, resend) - now, &reply)) continue;
      // A watching submit's pushes carry its request id too: only its
      // JobSubmitted (or an error) answers it.
      const bool pushed = req.has_submit() && (reply.has_status() || reply.has_results());
      if (reply.request_id() == req.request_id() && !pushed) {
        if (reply.has_error() && reply.error().code() == wire::Error::NOT_LEADER) {
          // A replica that does not lead: to the leader it names when this
          // client lists it, at once; none known yet (an election), ask
          // again at the next resend; one this client does not list: the
          // error says where it is.
          trouble = reply.error().message();
          if (reply.error().leader_endpoint().empty()) continue;
          auto it = std::find(endpoints_.begin(), endpoints_.end(), reply.error().leader_endpoint());
          if (it == endpoints_.end()) return StatusFromWireError(reply.error());
          MoveTo(static_cast<size_t>(it - endpoints_.begin()));
          sock_.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::none);
          resend = now + kResendS;
          continue;
        }
        if (reply.has_error()) return StatusFromWireError(reply.error());
        return reply;
      }
      if (reply.request_id() == 0 && reply.has_error()) {  // disconnected for not reading: the resend recovers
        trouble = reply.error().message();
        continue;
      }
      pushed_.push_back(std::move(reply));
    }
  }

  // Waits up to `seconds` for one message; false on timeout or garbage.
  bool ReceiveOne(double seconds, wire::ClientReply* out) {
    zmq::pollitem_t item{sock_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<long>(seconds * 1000) + 1));
    if (!(item.revents & ZMQ_POLLIN)) return false;
    zmq::message_t frame;
    if (!sock_.recv(frame, zmq::recv_flags::dontwait)) return false;
    return FromFrame(frame, out);
  }

  // The job's status, checked to be the job this client submitted under
  // that id (a scheduler that restarted without a journal reuses ids).
  StatusOr<wire::JobStatus> CheckedStatus(JobId job, const wire::JobStatus& st) const {
    auto it = submitted_keys_.find(job);
    if (it != submitted_keys_.end() && st.request_key() != it->second)
      return Status::NotFound("job " + std::to_string(job) +
                              " was lost: the scheduler restarted without its journal and that id is now another job");
    return st;
  }

  // Submits `job` (with a fresh request key unless it has one); `watch`
  // asks the scheduler to watch it under this request (SubmitJob.watch).
  StatusOr<wire::ClientReply> Submit(const wire::JobSpec& job, bool watch) {
    wire::ClientRequest req;
    *req.mutable_submit()->mutable_job() = job;
    req.mutable_submit()->set_watch(watch);
    std::string key = job.request_key().empty() ? NewRequestKey() : job.request_key();
    req.mutable_submit()->mutable_job()->set_request_key(key);
    auto r = Call(std::move(req));
    if (r.ok()) submitted_keys_[r->submitted().job_id()] = key;
    return r;
  }

  StatusOr<wire::JobStatus> Wait(JobId job, const WaitOptions& w) {
    wire::ClientRequest watch;
    watch.mutable_watch()->set_job_id(job);
    auto first = Call(watch);
    if (!first.ok()) return first.status();
    auto checked = CheckedStatus(job, first->status());
    if (!checked.ok()) return checked.status();
    return WaitWatched(job, first->request_id(), *checked, w);
  }

  // One request: the submit watches the job; a scheduler that did not take
  // the watch (older, or at its watcher cap) is asked with Wait.
  StatusOr<wire::JobStatus> SubmitAndWait(const wire::JobSpec& job, const WaitOptions& w) {
    auto r = Submit(job, /*watch=*/true);
    if (!r.ok()) return r.status();
    const wire::JobSubmitted& sub = r->submitted();
    if (!sub.watching()) return Wait(sub.job_id(), w);
    wire::JobStatus first;  // what the scheduler said: accepted, running
    first.set_job_id(sub.job_id());
    first.set_name(job.name());
    first.set_state(wire::JOB_RUNNING);
    first.set_tasks(sub.tasks());
    first.set_request_key(submitted_keys_[sub.job_id()]);
    return WaitWatched(sub.job_id(), r->request_id(), first, w);
  }

  // Waits for the end of `job`, watched under request `watch_id`, from its
  // status `last`: pushed results and final status, polls in between.
  StatusOr<wire::JobStatus> WaitWatched(JobId job, uint64_t watch_id, wire::JobStatus last, const WaitOptions& w) {
    if (w.on_progress) w.on_progress(last);
    double start = clock_.Now();
    double next_poll = start + w.progress_interval_s;
    double unanswered_since = -1;  // while the scheduler does not answer
    while (!IsTerminal(last.state())) {
      if (w.timeout_s > 0 && clock_.Now() - start > w.timeout_s)
        return Status::Unavailable("job " + std::to_string(job) + " still running after " +
                                   std::to_string(w.timeout_s) + " s");
      // Pushed messages: streamed results and the final status.
      HandlePushed(job, watch_id, w, &last);
      if (IsTerminal(last.state())) break;
      double left = next_poll - clock_.Now();
      wire::ClientReply r;
      if (left > 0 && ReceiveOne(left, &r)) {
        HandlePush(r, job, watch_id, w, &last);
        continue;
      }
      if (clock_.Now() >= next_poll) {
        wire::ClientRequest st;
        st.mutable_status()->set_job_id(job);
        auto s = Call(st);
        if (!s.ok() && s.status().code() == Status::Code::kUnavailable) {
          // The final status may have been pushed while this poll went
          // unanswered (the scheduler shut down right after pushing it).
          HandlePushed(job, watch_id, w, &last);
          if (IsTerminal(last.state())) break;
          // The scheduler may be restarting: keep asking, for a while.
          if (unanswered_since < 0) unanswered_since = clock_.Now() - opt_.timeout_s;
          if (clock_.Now() - unanswered_since > w.reconnect_timeout_s) return s.status();
          next_poll = clock_.Now() + w.progress_interval_s;
          continue;
        }
        unanswered_since = -1;
        if (!s.ok()) return s.status();
        auto st_checked = CheckedStatus(job, s->status());
        if (!st_checked.ok()) return st_checked.status();
        if (!IsTerminal(last.state())) last = *st_checked;
        if (w.on_progress) w.on_progress(last);
        next_poll = clock_.Now() + w.progress_interval_s;
      }
    }
    // Results pushed before the final status: ZeroMQ keeps the order, so
    // they are queued (a job that finished before the watch was answered
    // never entered the loop above).
    HandlePushed(job, watch_id, w, &last);
    if (w.on_progress) w.on_progress(last);
    return last;
  }

  // Every message queued by Call while it waited for its own reply.
  void HandlePushed(JobId job, uint64_t watch_id, const WaitOptions& w, wire::JobStatus* last) {
    for (; !pushed_.empty(); pushed_.pop_front()) HandlePush(pushed_.front(), job, watch_id, w, last);
  }

  void HandlePush(const wire::ClientReply& r, JobId job, uint64_t watch_id, const WaitOptions& w,
                  wire::JobStatus* last) {
    if (r.has_results() && r.results().job_id() == job) {
      if (w.on_result)
        for (const auto& res : r.results().results()) w.on_result(res);
    } else if (r.has_status() && r.status().job_id() == job && (r.request_id() == watch_id || IsTerminal(r.status().state()))) {
      *last = r.status();
    }
  }

  ClientOptions opt_;
  zmq::context_t ctx_;
  zmq::socket_t sock_;
  std::unique_ptr<HandshakeMonitor> handshake_;
  std::vector<std::string> endpoints_;  // opt_.endpoint's list: a scheduler's replicas
  size_t current_ = 0;                  // the one connected
  Status connect_status_;
  SteadyClock clock_;
  uint64_t next_request_ = 0;
  std::deque<wire::ClientReply> pushed_;
  std::unordered_map<JobId, std::string> submitted_keys_;  // request key of each job submitted here
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

StatusOr<JobId> Client::Submit(const wire::JobSpec& job) {
  auto r = impl_->Submit(job, /*watch=*/false);
  if (!r.ok()) return r.status();
  return JobId{r->submitted().job_id()};
}

StatusOr<wire::JobStatus> Client::SubmitAndWait(const wire::JobSpec& job, const WaitOptions& options) {
  return impl_->SubmitAndWait(job, options);
}

std::string NewRequestKey() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ static_cast<uint64_t>(getpid()) << 32};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

StatusOr<wire::JobStatus> Client::GetStatus(JobId job) {
  wire::ClientRequest req;
  req.mutable_status()->set_job_id(job);
  auto r = impl_->Call(std::move(req));
  if (!r.ok()) return r.status();
  return r->status();
}

StatusOr<wire::JobStatus> Client::Cancel(JobId job) {
  wire::ClientRequest req;
  req.mutable_cancel()->set_job_id(job);
  auto r = impl_->Call(std::move(req));
  if (!r.ok()) return r.status();
  return r->status();
}

StatusOr<std::vector<wire::ExecutorInfo>> Client::Executors(uint32_t page) {
  std::vector<wire::ExecutorInfo> out;
  uint64_t after = 0;
  do {
    wire::ClientRequest req;
    req.mutable_list_executors()->set_after_id(after);
    req.mutable_list_executors()->set_limit(page);
    auto r = impl_->Call(std::move(req));
    if (!r.ok()) return r.status();
    out.insert(out.end(), r->executors().executors().begin(), r->executors().executors().end());
    // A scheduler that does not page sends no next_after_id: one page.
    after = r->executors().next_after_id();
  } while (after != 0);
  return out;
}

StatusOr<uint64_t> Client::ExecutorCount() {
  wire::ClientRequest req;
  req.mutable_list_executors()->set_limit(1);
  auto r = impl_->Call(std::move(req));
  if (!r.ok()) return r.status();
  return r->executors().total();
}

StatusOr<std::vector<wire::TaskResult>> Client::Results(JobId job) {
  wire::ClientRequest req;
  req.mutable_results()->set_job_id(job);
  auto r = impl_->Call(std::move(req));
  if (!r.ok()) return r.status();
  return std::vector<wire::TaskResult>(r->results().results().begin(), r->results().results().end());
}

StatusOr<wire::JobTrace> Client::Trace(JobId job) {
  wire::ClientRequest req;
  req.mutable_trace()->set_job_id(job);
  auto r = impl_->Call(std::move(req));
  if (!r.ok()) return r.status();
  return r->trace();
}

StatusOr<wire::JobStatus> Client::Wait(JobId job, const WaitOptions& options) { return impl_->Wait(job, options); }

wire::JobSpec FanoutJob(const std::string& kernel, const std::string& args, uint32_t tasks) {
  wire::JobSpec j;
  j.set_name(kernel + " x" + std::to_string(tasks));
  j.mutable_template_()->set_kernel(kernel);
  j.mutable_template_()->set_args(args);
  j.mutable_template_()->set_args_template(HasTaskArgsTemplate(args));
  j.set_template_count(tasks);
  return j;
}

namespace {

// "JOB:TASK" or "JOB:*" (every task) of a task's `inputs`; JOB goes through
// `resolve` (a job id in job files, a stage name in pipeline files).
Status ReadInput(const std::string& text, const std::string& key, const JobRefResolver& resolve, wire::TaskRef* r) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return Status::InvalidArgument(key + " = '" + text + "': write JOB:TASK or JOB:* (every task)");
  auto job = resolve(text.substr(0, colon), key);
  if (!job.ok()) return job.status();
  r->set_job_id(*job);
  const std::string task = text.substr(colon + 1);
  if (task == "*") {
    r->set_all_tasks(true);
    return Status::Ok();
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long i = std::strtoull(task.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || i > UINT32_MAX || task[0] == '-')
    return Status::InvalidArgument(key + " = '" + text + "': '" + task + "' is not a task index");
  r->set_task_index(static_cast<uint32_t>(i));
  return Status::Ok();
}

Status ReadTask(const Config& c, const std::string& p, const JobRefResolver& resolve, wire::TaskSpec* t) {
  std::string kernel, args, task_class;
  uint32_t slots = 1, gpus = 0;
  int64_t memory_mb = 0;
  double input_size = 0, timeout = 0;
  TableReader r(c, p);
  r.Get("kernel", &kernel).Get("args", &args).Get("cpu_slots", &slots).Get("gpus", &gpus);
  r.Get("memory_mb", &memory_mb)
      .Check(memory_mb >= 0 && static_cast<uint64_t>(memory_mb) <= kMaxMemoryMb,
             "memory_mb must be in [0, 2^40] MiB, got " + std::to_string(memory_mb));
  r.Get("input_size", &input_size).Get("class", &task_class).Get("timeout_s", &timeout);
  if (!r.status().ok()) return r.status();
  t->set_timeout_s(timeout);
  t->set_kernel(kernel);
  t->set_args(args);
  t->mutable_demand()->set_cpu_slots(slots);
  t->mutable_demand()->set_gpus(gpus);
  t->mutable_demand()->set_memory_mb(static_cast<uint64_t>(memory_mb));
  for (const auto& k : c.Children(p + "labels")) {
    std::string v;
    if (Status s = c.Get(p + "labels." + k, &v); !s.ok()) return s;
    (*t->mutable_demand()->mutable_labels())[k] = v;
  }
  t->mutable_features()->set_input_size(input_size);
  t->mutable_features()->set_task_class(task_class);
  // Unset unless the file says: the job's, else the kernel's default.
  if (c.Has(p + "idempotent")) {
    bool idempotent = false;
    if (Status s = c.Get(p + "idempotent", &idempotent); !s.ok()) return s;
    t->set_idempotent(idempotent);
  }
  bool templated = HasTaskArgsTemplate(args);
  if (Status s = c.Get(p + "args_template", &templated); !s.ok()) return s;
  t->set_args_template(templated);
  for (size_t i = 0, n = c.ArraySize(p + "inputs"); i < n; ++i) {
    const std::string key = p + "inputs." + std::to_string(i);
    std::string text;
    if (Status s = c.Get(key, &text); !s.ok()) return s;
    if (Status s = ReadInput(text, key, resolve, t->add_inputs()); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<uint64_t> JobIdRef(const std::string& text, const std::string& key) {
  char* end = nullptr;
  errno = 0;
  unsigned long long id = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || id == 0 || text[0] == '-')
    return Status::InvalidArgument(key + ": '" + text + "' is not a job id");
  return static_cast<uint64_t>(id);
}

StatusOr<wire::JobSpec> JobFromConfig(const Config& c, const std::string& prefix, const std::string& path,
                                      const JobRefResolver& resolve) {
  wire::JobSpec j;
  std::string name = path, rule = "all";
  uint32_t count = 0, k = 0, min_count = 0, max_attempts = 0;
  double deadline = 0, timeout = 0;
  int64_t divisible_units = 0;
  bool wait = false, stream = false, outputs = false;
  const std::string& p = prefix;
  TableReader r(c, p);
  r.Get("name", &name).Get("count", &count).Get("rule", &rule).Get("k", &k).Get("min_count", &min_count);
  r.Get("deadline_s", &deadline).Get("max_attempts", &max_attempts).Get("wait_for_resources", &wait);
  r.Get("stream_results", &stream).Get("return_outputs", &outputs).Get("timeout_s", &timeout);
  r.Get("divisible_units", &divisible_units).Check(divisible_units >= 0, "divisible_units must be >= 0");
  std::string output_dir;
  int64_t priority = 0;
  r.Get("output_dir", &output_dir).Get("priority", &priority);
  constexpr int64_t kMaxPriority = 1000;  // the scheduler's kMaxJobPriority (docs/JOBS.md)
  r.Check(priority >= -kMaxPriority && priority <= kMaxPriority, "priority must be in -1000..1000");
  if (!r.status().ok()) return r.status();
  j.set_priority(static_cast<int32_t>(priority));
  if (c.Has(p + "idempotent")) {
    bool idempotent = false;
    if (Status s = c.Get(p + "idempotent", &idempotent); !s.ok()) return s;
    j.set_idempotent(idempotent);
  }
  // Jobs it runs after: job ids (numbers) in a job file, stage names in a pipeline's.
  for (size_t i = 0, n = c.ArraySize(p + "after"); i < n; ++i) {
    const std::string key = p + "after." + std::to_string(i);
    int64_t id = 0;
    std::string text;
    if (c.Get(key, &id).ok())
      text = std::to_string(id);
    else if (Status s = c.Get(key, &text); !s.ok())
      return Status::InvalidArgument(key + " must be a job id or a name");
    auto job = resolve(text, key);
    if (!job.ok()) return job.status();
    j.add_after(*job);
  }
  j.set_output_dir(output_dir);
  j.set_divisible_units(static_cast<uint64_t>(divisible_units));
  j.set_timeout_s(timeout);
  j.set_name(name);
  if (c.Has(p + "template")) {
    if (Status s = ReadTask(c, p + "template.", resolve, j.mutable_template_()); !s.ok()) return s;
    j.set_template_count(count == 0 ? 1 : count);
  }
  for (size_t i = 0, n = c.ArraySize(p + "task"); i < n; ++i)
    if (Status s = ReadTask(c, p + "task." + std::to_string(i) + ".", resolve, j.add_tasks()); !s.ok()) return s;
  if (rule == "all") {
    j.mutable_rule()->set_kind(wire::CompletionRule::ALL);
  } else if (rule == "k_of_n") {
    j.mutable_rule()->set_kind(wire::CompletionRule::K_OF_N);
  } else if (rule == "quorum") {
    j.mutable_rule()->set_kind(wire::CompletionRule::QUORUM);
  } else {
    return Status::InvalidArgument(path + ": rule must be all, k_of_n or quorum (got '" + rule + "')");
  }
  j.mutable_rule()->set_k(k);
  j.mutable_rule()->set_min_count(min_count);
  j.mutable_rule()->set_deadline_s(deadline);
  j.set_max_attempts(max_attempts);
  j.set_wait_for_resources(wait);
  j.set_stream_results(stream);
  j.set_return_outputs(outputs);
  if (j.tasks_size() == 0 && j.template_count() == 0)
    return Status::InvalidArgument(path + ": " + (p.empty() ? "" : p) +
                                   "no tasks (add a [template] with count, or [[task]] entries)");
  return j;
}

namespace {

StatusOr<wire::JobSpec> JobFromFile(const Config& c, const std::string& path) {
  auto j = JobFromConfig(c, "", path, JobIdRef);
  if (!j.ok()) return j;
  if (Status s = c.CheckAllUsed(); !s.ok()) return s;
  return j;
}

}  // namespace

StatusOr<wire::JobSpec> LoadJobFile(const std::string& path) {
  auto cfg = Config::LoadFile(path);
  if (!cfg.ok()) return cfg.status();
  return JobFromFile(*cfg, path);
}

StatusOr<wire::JobSpec> ParseJobFile(std::string_view toml_text, const std::string& origin) {
  auto cfg = Config::Parse(toml_text, origin);
  if (!cfg.ok()) return cfg.status();
  return JobFromFile(*cfg, origin);
}

}  // namespace tailcut
