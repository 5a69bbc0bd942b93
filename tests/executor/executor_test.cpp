// In-process executor against a fake scheduler (a ROUTER on a free port).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <unistd.h>

#include <zmq.hpp>

#include "tailcut/common/config.h"
#include "tailcut/common/ids.h"
#include "tailcut/wire/wire.h"
#include "tailcut/executor/executor.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace std::chrono_literals;

namespace {

constexpr auto kGuard = 20s;  // failure guard only

class FakeScheduler {
 public:
  explicit FakeScheduler(const std::string& endpoint = "tcp://127.0.0.1:*") : router_(ctx_, zmq::socket_type::router) {
    router_.set(zmq::sockopt::linger, 0);
    router_.bind(endpoint);
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& peer() const { return peer_; }

  // Next message from the executor, or false after the guard time.
  bool Recv(wire::ExecutorMessage* msg, std::chrono::milliseconds timeout = kGuard) {
    zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) == 0) return false;
    zmq::message_t id, body;
    REQUIRE(router_.recv(id));
    REQUIRE(id.more());
    REQUIRE(router_.recv(body));
    REQUIRE_FALSE(body.more());
    peer_ = id.to_string();
    REQUIRE(FromFrame(body, msg));
    REQUIRE(msg->version() == kProtocolVersion);
    return true;
  }

  // Skips messages until one with a Register body arrives.
  bool RecvRegister(wire::Register* reg) {
    auto deadline = std::chrono::steady_clock::now() + kGuard;
    wire::ExecutorMessage m;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!Recv(&m, 100ms)) continue;
      if (m.has_register_()) {
        *reg = m.register_();
        return true;
      }
    }
    return false;
  }

  void SendRaw(const std::string& bytes) {
    router_.send(zmq::buffer(peer_), zmq::send_flags::sndmore);
    router_.send(zmq::buffer(bytes));
  }
  void Send(wire::SchedulerToExecutor msg, bool set_version = true) {
    if (set_version) msg.set_version(kProtocolVersion);
    router_.send(zmq::buffer(peer_), zmq::send_flags::sndmore);
    router_.send(ToFrame(msg), zmq::send_flags::none);
  }
  void Ack(uint64_t id, uint32_t heartbeat_ms = 100, uint32_t lost_after_ms = 10000) {
    wire::SchedulerToExecutor m;
    m.mutable_registered()->set_executor_id(id);
    m.mutable_registered()->set_heartbeat_interval_ms(heartbeat_ms);
    m.mutable_registered()->set_lost_after_ms(lost_after_ms);
    Send(m);
  }

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t router_;
  std::string endpoint_;
  std::string peer_;
};

// Collects Reports; asserts every attempt is started and finished once.
struct ReportLog {
  std::map<AttemptId, int> started;
  std::map<AttemptId, wire::AttemptResult> results;
  std::set<AttemptId> with_progress;
  int reports = 0;
  int most_results_in_one_report = 0;
  int duplicate_results = 0;
  bool goodbye = false;
  int registers = 0;

  void Add(const wire::ExecutorMessage& m) {
    if (m.has_goodbye()) goodbye = true;
    if (m.has_register_()) ++registers;
    if (!m.has_report()) return;
    ++reports;
    most_results_in_one_report = std::max(most_results_in_one_report, m.report().results_size());
    for (auto& s : m.report().started()) ++started[s.attempt_id()];
    for (auto& r : m.report().results()) {
      if (results.count(r.attempt_id())) ++duplicate_results;
      results[r.attempt_id()] = r;
    }
    for (auto& p : m.report().progress()) with_progress.insert(p.attempt_id());
  }
  template <typename Pred>
  bool Until(FakeScheduler& s, Pred pred) {
    auto deadline = std::chrono::steady_clock::now() + kGuard;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      wire::ExecutorMessage m;
      if (s.Recv(&m, 100ms)) Add(m);
    }
    return true;
  }
};

// Runs an Executor on a thread for the scope of a test.
class RunningExecutor {
 public:
  explicit RunningExecutor(ExecutorOptions o) : ex_(std::move(o)) {
    thread_ = std::thread([this] { status_ = ex_.Run(); });
  }
  ~RunningExecutor() { (void)Stop(); }  // its status was checked by the test, if it cared
  Status Stop() {
    if (thread_.joinable()) {
      ex_.Stop();
      thread_.join();
    }
    return status_;
  }

 private:
  Executor ex_;
  Status status_;
  std::thread thread_;
};

ExecutorOptions TestOptions(const FakeScheduler& s) {
  ExecutorOptions o;
  o.scheduler = s.endpoint();
  o.name = "test-exec";
  o.slots = 2;
  o.threads = 1;
  o.heartbeat_ms = 100;
  o.register_retry_ms = 100;
  o.labels["zone"] = "lab";
  return o;
}

wire::Assignment* Assign(wire::SchedulerToExecutor* m, AttemptId id, const std::string& kernel,
                         const std::string& args = "") {
  wire::Assignment* a = m->mutable_work()->add_assign();
  a->set_attempt_id(id);
  a->set_job_id(1);
  a->set_task_index(static_cast<uint32_t>(id));
  a->set_kernel(kernel);
  a->set_args(args);
  return a;
}

}  // namespace

TEST_CASE("executor registers, runs a batch and reports each attempt once") {
  FakeScheduler sched;
  ExecutorOptions o = TestOptions(sched);
  o.allow_kernels.push_back("shell");  // what --allow-shell does
  RunningExecutor ex(o);
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  CHECK(reg.name() == "test-exec");
  CHECK(reg.cpu_slots() == 2);
  CHECK(reg.gpus_size() == 0);
  CHECK(reg.labels().at("zone") == "lab");
  CHECK(std::vector<std::string>(reg.kernels().begin(), reg.kernels().end()) ==
        std::vector<std::string>{"coded_matmul", "gradient_worker", "matmul", "noop", "shell", "sleep", "spin"});
  CHECK(sched.peer().rfind("test-exec/", 0) == 0);  // routing id: name + random
  sched.Ack(7);

  wire::SchedulerToExecutor work;
  for (AttemptId id = 1; id <= 10; ++id) Assign(&work, id, "noop");
  for (AttemptId id = 11; id <= 13; ++id) Assign(&work, id, "sleep", "ms=5");
  Assign(&work, 14, "matmul", "n=16");
  Assign(&work, 15, "shell", "echo hi");
  Assign(&work, 16, "no-such-kernel");
  sched.Send(work);

  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 16; }));
  for (AttemptId id = 1; id <= 15; ++id) {
    INFO("attempt " << id);
    CHECK(log.started[id] == 1);
    CHECK(log.results[id].outcome() == wire::AttemptResult::OK);
  }
  CHECK(log.results[14].output().rfind("checksum=", 0) == 0);
  CHECK(log.results[15].output() == "hi\n");
  CHECK(log.results[16].outcome() == wire::AttemptResult::FAILED);
  CHECK(log.results[16].error().find("unknown kernel 'no-such-kernel'") == 0);
  CHECK(log.duplicate_results == 0);
  // Batched: the ten inline noops of one Work come back in one Report.
  CHECK(log.most_results_in_one_report >= 10);

  REQUIRE(ex.Stop().ok());
  REQUIRE(log.Until(sched, [&] { return log.goodbye; }));
}

TEST_CASE("executor runs only its allow_kernels: shell is off unless enabled, and refused naming the flag") {
  FakeScheduler sched;
  RunningExecutor ex(TestOptions(sched));  // the default list
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  CHECK(std::vector<std::string>(reg.kernels().begin(), reg.kernels().end()) ==
        std::vector<std::string>{"coded_matmul", "gradient_worker", "matmul", "noop", "sleep", "spin"});
  sched.Ack(7);
  // A scheduler that assigns it anyway (a bug, or a forged one) is refused.
  wire::SchedulerToExecutor work;
  Assign(&work, 1, "shell", "touch /tmp/tailcut-must-not-exist");
  Assign(&work, 2, "noop");
  sched.Send(work);
  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 2; }));
  CHECK(log.results[1].outcome() == wire::AttemptResult::FAILED);
  CHECK(log.results[1].error() == "kernel 'shell' is not enabled on this executor (start it with --allow-shell)");
  CHECK(log.started.count(1) == 0);
  CHECK(log.results[2].outcome() == wire::AttemptResult::OK);
  REQUIRE(ex.Stop().ok());
}

TEST_CASE("an executor listing no kernels registers none, and an unknown name fails Run") {
  FakeScheduler sched;
  ExecutorOptions o = TestOptions(sched);
  o.allow_kernels = {};
  RunningExecutor ex(o);
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  CHECK(reg.kernels_size() == 0);  // none, not "any"
  REQUIRE(ex.Stop().ok());

  o.allow_kernels = {"noop", "fft"};
  Executor bad(o);
  Status s = bad.Run();
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("allow_kernels: unknown kernel(s) 'fft'") == 0);
}

TEST_CASE("executor cancels, survives bad frames and re-registers on UNKNOWN_EXECUTOR") {
  FakeScheduler sched;
  RunningExecutor ex(TestOptions(sched));
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  sched.Ack(1);

  wire::SchedulerToExecutor work;
  Assign(&work, 100, "sleep", "ms=60000");
  sched.Send(work);
  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.started.count(100); }));
  // Heartbeat Reports carry the progress of running attempts.
  REQUIRE(log.Until(sched, [&] { return log.with_progress.count(100); }));

  wire::SchedulerToExecutor cancel;
  cancel.mutable_work()->add_cancel(100);
  sched.Send(cancel);
  REQUIRE(log.Until(sched, [&] { return log.results.count(100); }));
  CHECK(log.results[100].outcome() == wire::AttemptResult::CANCELLED);

  // Garbage, a wrong protocol version and an empty body are all ignored.
  sched.SendRaw("\xff\xff\xff\xff\x0f not a protobuf");
  wire::SchedulerToExecutor wrong_version;
  wrong_version.set_version(99);
  Assign(&wrong_version, 200, "noop");
  sched.Send(wrong_version, /*set_version=*/false);
  sched.Send(wire::SchedulerToExecutor{});
  wire::SchedulerToExecutor other_error;
  *other_error.mutable_error() = MakeError(wire::Error::INVALID_ARGUMENT, "just a test");
  sched.Send(other_error);
  wire::SchedulerToExecutor next;
  Assign(&next, 201, "noop");
  sched.Send(next);
  REQUIRE(log.Until(sched, [&] { return log.results.count(201); }));
  CHECK(log.results[201].outcome() == wire::AttemptResult::OK);
  CHECK(log.results.count(200) == 0);

  // The scheduler restarted: it does not know us; we register again.
  wire::SchedulerToExecutor unknown;
  *unknown.mutable_error() = MakeError(wire::Error::UNKNOWN_EXECUTOR, "who are you?");
  sched.Send(unknown);
  REQUIRE(sched.RecvRegister(&reg));
  sched.Ack(2);
  wire::SchedulerToExecutor after;
  Assign(&after, 300, "sleep", "ms=1");
  sched.Send(after);
  REQUIRE(log.Until(sched, [&] { return log.results.count(300); }));
  CHECK(log.results[300].outcome() == wire::AttemptResult::OK);
  CHECK(log.duplicate_results == 0);
}

TEST_CASE("executor drops its attempts and re-registers when the scheduler goes silent") {
  FakeScheduler sched;
  RunningExecutor ex(TestOptions(sched));
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  sched.Ack(1, /*heartbeat_ms=*/50, /*lost_after_ms=*/300);
  wire::SchedulerToExecutor work;
  Assign(&work, 1, "sleep", "ms=60000");
  sched.Send(work);
  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.started.count(1); }));
  // Silence from here on: the executor must give up on us and register again.
  REQUIRE(log.Until(sched, [&] { return log.registers > 0; }));
  sched.Ack(2, 50, 10000);
  wire::SchedulerToExecutor more;
  Assign(&more, 2, "noop");
  sched.Send(more);
  REQUIRE(log.Until(sched, [&] { return log.results.count(2); }));
  CHECK(log.results.count(1) == 0);  // void: never reported
}

TEST_CASE("executor waits for a scheduler that is not there yet and stops cleanly") {
  ExecutorOptions o;
  o.scheduler = "tcp://127.0.0.1:1";  // nothing listens here
  o.slots = 1;
  o.register_retry_ms = 50;
  RunningExecutor ex(o);
  std::this_thread::sleep_for(150ms);
  CHECK(ex.Stop().ok());
}

TEST_CASE("the shipped config file parses and every key is known") {
  auto config = Config::LoadFile(std::string(TAILCUT_SOURCE_DIR) + "/configs/executor.toml");
  REQUIRE(config.ok());
  std::string level;
  REQUIRE(config->Get("log_level", &level).ok());  // read by the daemon
  auto o = ExecutorOptionsFromConfig(*config);
  REQUIRE(o.ok());
  CHECK(config->CheckAllUsed().ok());
  CHECK(o->scheduler == "tcp://127.0.0.1:7700");
  CHECK(o->slots == 0);
  CHECK(o->faults.slowdown == 1.0);
  CHECK_FALSE(o->faults.any());
  CHECK(o->allow_kernels == DefaultAllowedKernels());  // the file documents the default

  REQUIRE(config->Override("faults.slowdown=2.5").ok());
  REQUIRE(config->Override("labels.zone=\"eu\"").ok());
  REQUIRE(config->Override("typo_key=1").ok());
  o = ExecutorOptionsFromConfig(*config);
  REQUIRE(o.ok());
  CHECK(o->faults.slowdown == 2.5);
  CHECK(o->labels.at("zone") == "eu");
  CHECK_FALSE(config->CheckAllUsed().ok());

  REQUIRE(config->Override("scheduler=\"nonsense\"").ok());
  CHECK_FALSE(ExecutorOptionsFromConfig(*config).ok());
}

TEST_CASE("executor refuses attempts beyond max_queued with the reason") {
  FakeScheduler sched;
  ExecutorOptions o = TestOptions(sched);
  o.max_queued = 1;  // 2 slots + 1 queued
  RunningExecutor ex(o);
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  sched.Ack(1);
  wire::SchedulerToExecutor work;
  for (AttemptId id = 1; id <= 5; ++id) Assign(&work, id, "sleep", "ms=60000");
  sched.Send(work);
  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 2 && log.started.size() == 2; }));
  for (AttemptId id : {4, 5}) {
    INFO("attempt " << id);
    REQUIRE(log.results.count(id));
    CHECK(log.results[id].outcome() == wire::AttemptResult::REFUSED);
    CHECK(log.results[id].error() == "executor queue full: 3 attempts taken for 2 slots, max_queued=1");
    CHECK(log.started.count(id) == 0);
  }
  // Room again once attempts end: two cancelled, 3 runs, and 6 is taken.
  wire::SchedulerToExecutor cancel;
  cancel.mutable_work()->add_cancel(1);
  cancel.mutable_work()->add_cancel(2);
  sched.Send(cancel);
  REQUIRE(log.Until(sched, [&] { return log.results.count(1) && log.results.count(2) && log.started.count(3); }));
  wire::SchedulerToExecutor next;
  Assign(&next, 6, "noop");
  sched.Send(next);
  REQUIRE(log.Until(sched, [&] { return log.results.count(6); }));
  CHECK(log.results[1].outcome() == wire::AttemptResult::CANCELLED);
  CHECK(log.results[6].outcome() == wire::AttemptResult::OK);
  CHECK(log.duplicate_results == 0);
}

TEST_CASE("executor caps the outputs it holds: refused while unsent, failed when one never fits") {
  auto sched = std::make_unique<FakeScheduler>();
  const std::string endpoint = sched->endpoint();
  ExecutorOptions o = TestOptions(*sched);
  o.slots = 3;
  o.max_output_bytes = 100;
  o.allow_kernels.push_back("shell");
  RunningExecutor ex(o);
  wire::Register reg;
  REQUIRE(sched->RecvRegister(&reg));
  sched->Ack(1, /*heartbeat_ms=*/100, /*lost_after_ms=*/60000);

  // One output larger than the cap can never be held: the attempt fails.
  wire::SchedulerToExecutor work;
  Assign(&work, 1, "shell", "printf '%0101d' 0");
  Assign(&work, 2, "shell", "printf '%040d' 0");
  sched->Send(work);
  ReportLog log;
  REQUIRE(log.Until(*sched, [&] { return log.results.size() == 2; }));
  CHECK(log.results[1].outcome() == wire::AttemptResult::FAILED);
  CHECK(log.results[1].error() == "output of 101 bytes exceeds the executor's max_output_bytes=100");
  CHECK(log.results[1].output().empty());
  CHECK(log.results[2].outcome() == wire::AttemptResult::OK);
  CHECK(log.results[2].output().size() == 40);

  // The link goes down while three 40-byte outputs are produced: two are
  // held for sending, the third is refused (the scheduler places it again).
  wire::SchedulerToExecutor more;
  for (AttemptId id = 3; id <= 5; ++id) Assign(&more, id, "shell", "sleep 0.5; printf '%040d' 0");
  sched->Send(more);
  REQUIRE(log.Until(*sched, [&] { return log.started.size() == 5; }));
  sched.reset();  // the scheduler's socket closes; the executor holds its results
  std::this_thread::sleep_for(1500ms);
  sched = std::make_unique<FakeScheduler>(endpoint);  // back on the same port
  REQUIRE(log.Until(*sched, [&] { return log.results.size() == 5; }));
  int ok = 0, refused = 0;
  for (AttemptId id = 3; id <= 5; ++id) {
    const wire::AttemptResult& r = log.results[id];
    if (r.outcome() == wire::AttemptResult::OK) {
      ++ok;
      CHECK(r.output().size() == 40);
    } else {
      ++refused;
      CHECK(r.outcome() == wire::AttemptResult::REFUSED);
      CHECK(r.error() == "executor output memory full: 80 + 40 bytes of outputs not yet sent, max_output_bytes=100");
    }
  }
  CHECK(ok == 2);
  CHECK(refused == 1);
}

TEST_CASE("max_output_bytes and max_queued are read from the config") {
  auto config = Config::Parse("max_output_bytes = 8388608\nmax_queued = 16\n");
  REQUIRE(config.ok());
  auto o = ExecutorOptionsFromConfig(*config);
  REQUIRE(o.ok());
  CHECK(o->max_output_bytes == 8388608u);
  CHECK(o->max_queued == 16u);
  REQUIRE(config->Override("max_output_bytes=-1").ok());
  auto bad = ExecutorOptionsFromConfig(*config);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "max_output_bytes must be >= 0 (0 = no cap)");
}

TEST_CASE("allow_kernels is read from the config: a comma-separated list, unknown names an error") {
  auto config = Config::Parse("allow_kernels = \"noop, sleep,noop\"\n");
  REQUIRE(config.ok());
  auto o = ExecutorOptionsFromConfig(*config);
  REQUIRE(o.ok());
  CHECK(o->allow_kernels == std::vector<std::string>{"noop", "sleep"});
  REQUIRE(config->Override("allow_kernels=\"\"").ok());
  o = ExecutorOptionsFromConfig(*config);
  REQUIRE(o.ok());
  CHECK(o->allow_kernels.empty());  // none
  REQUIRE(config->Override("allow_kernels=\"noop,fft,shel\"").ok());
  auto bad = ExecutorOptionsFromConfig(*config);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "allow_kernels: unknown kernel(s) 'fft', 'shel' (known: coded_matmul, "
                                  "gradient_worker, matmul, noop, shell, sleep, spin)");
  auto defaults = ExecutorOptionsFromConfig(Config());
  REQUIRE(defaults.ok());
  CHECK(defaults->allow_kernels == DefaultAllowedKernels());
}

TEST_CASE("max_message_bytes is read from the config and bounds max_output_bytes") {
  auto config = Config::Parse("max_message_bytes = 1048576\nmax_output_bytes = 524288\n");
  REQUIRE(config.ok());
  auto o = ExecutorOptionsFromConfig(*config);
  REQUIRE(o.ok());
  CHECK(o->max_message_bytes == 1048576u);
  CHECK(ExecutorOptions{}.max_message_bytes == 64u << 20);
  REQUIRE(config->Override("max_output_bytes=524289").ok());
  auto over = ExecutorOptionsFromConfig(*config);
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().message() ==
        "max_output_bytes must be at most half of max_message_bytes (1048576): a Report carries them");
  REQUIRE(config->Override("max_message_bytes=1000").ok());
  auto tiny = ExecutorOptionsFromConfig(*config);
  REQUIRE_FALSE(tiny.ok());
  CHECK(tiny.status().message() == "max_message_bytes must be in 65536..2147483647");
}

// Without max_output_bytes, outputs are still held under half of
// max_message_bytes, so that no Report is too large for the scheduler.
TEST_CASE("an output over half of max_message_bytes fails even without max_output_bytes") {
  FakeScheduler sched;
  ExecutorOptions o = TestOptions(sched);
  o.max_message_bytes = 64 * 1024;
  o.allow_kernels.push_back("shell");
  RunningExecutor ex(o);
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  sched.Ack(1, /*heartbeat_ms=*/100, /*lost_after_ms=*/60000);
  wire::SchedulerToExecutor work;
  Assign(&work, 1, "shell", "head -c 40000 /dev/zero");
  Assign(&work, 2, "shell", "head -c 1000 /dev/zero");
  sched.Send(work);
  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 2; }));
  CHECK(log.results[1].outcome() == wire::AttemptResult::FAILED);
  CHECK(log.results[1].error() == "output of 40000 bytes exceeds the executor's max_message_bytes/2=32768");
  CHECK(log.results[2].outcome() == wire::AttemptResult::OK);
  CHECK(log.results[2].output().size() == 1000);
}

TEST_CASE("defaults resolve to machine values") {
  ExecutorOptions o = ResolveDefaults(ExecutorOptions{});
  CHECK(o.slots >= 1);
  CHECK(o.threads >= 1);
  CHECK(o.threads <= o.slots);
  CHECK(o.name.find(':') != std::string::npos);
}

// ------------------------------------------------------ the python kernel --

namespace {

// A `module:function` task for the python kernel (python/tailcut/_pickling.py):
// no cloudpickle needed. The value is pickle.dumps(((), {}), protocol=5)
// without out-of-band buffers.
std::string ReferenceTask(const std::string& ref) {
  static const char kNoArgs[] = "\x80\x05\x95\x06\x00\x00\x00\x00\x00\x00\x00)}\x94\x86\x94.";
  const std::string stream(kNoArgs, sizeof kNoArgs - 1);
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [](uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  return std::string("TCPY\x01M", 6) + u32(static_cast<uint32_t>(ref.size())) + ref + u32(0) + u64(stream.size()) +
         stream;
}

bool HavePython() { return access("/usr/bin/python3", X_OK) == 0; }

}  // namespace

TEST_CASE("the python kernel is off unless allowed, and refused naming --allow-python") {
  FakeScheduler sched;
  RunningExecutor ex(TestOptions(sched));
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  CHECK(reg.python_version().empty());
  CHECK(std::find(reg.kernels().begin(), reg.kernels().end(), "python") == reg.kernels().end());
  sched.Ack(3);
  wire::SchedulerToExecutor work;
  Assign(&work, 1, "python", ReferenceTask("os:getpid"));
  sched.Send(work);
  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 1; }));
  CHECK(log.results[1].outcome() == wire::AttemptResult::FAILED);
  CHECK(log.results[1].error().find("kernel 'python' is not enabled on this executor (start it with --allow-python") ==
        0);
  REQUIRE(ex.Stop().ok());
}

TEST_CASE("allow_python and the python keys are read from the config") {
  auto config = Config::Parse(
      "allow_python = true\npython = \"/usr/bin/python3\"\npython_preload = \"json, math\"\n"
      "python_max_tasks = 5\npython_max_rss_mb = 300\npython_path = \"/opt/tc\"\n"
      "trust_unauthenticated_scheduler = true\n");
  REQUIRE(config.ok());
  auto o = ExecutorOptionsFromConfig(*config);
  REQUIRE(o.ok());
  CHECK(config->CheckAllUsed().ok());
  CHECK(o->python.allow);
  CHECK(o->python.preload == std::vector<std::string>{"json", "math"});
  CHECK((o->python.max_tasks == 5u && o->python.max_rss_mb == 300u));
  CHECK(PythonPackagePath(o->python) == "/opt/tc");
  CHECK(std::find(o->allow_kernels.begin(), o->allow_kernels.end(), "python") != o->allow_kernels.end());
  // Naming it in allow_kernels is the same as allow_python.
  auto listed = Config::Parse("allow_kernels = \"noop,python\"\ntrust_unauthenticated_scheduler = true\n");
  REQUIRE(listed.ok());
  auto l = ExecutorOptionsFromConfig(*listed);
  REQUIRE(l.ok());
  CHECK(l->python.allow);
  CHECK(l->allow_kernels == std::vector<std::string>{"noop", "python"});
  // Like shell, python runs what the scheduler sends: not from an unauthenticated one.
  auto keyless = Config::Parse("allow_python = true\n");
  REQUIRE(keyless.ok());
  auto k = ExecutorOptionsFromConfig(*keyless);
  REQUIRE_FALSE(k.ok());
  CHECK(k.status().message().find("the python kernel runs any code its scheduler sends") != std::string::npos);
}

TEST_CASE("an executor whose python does not run fails Run with the reason") {
  FakeScheduler sched;
  ExecutorOptions o = TestOptions(sched);
  o.python.allow = true;
  o.python.interpreter = "/nonexistent/python3";
  Executor bad(o);
  Status s = bad.Run();
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("allow_python: python = '/nonexistent/python3'") == 0);
}

TEST_CASE("the python kernel runs module:function tasks on a warm worker and registers its version") {
  if (!HavePython()) {
    WARN("no /usr/bin/python3: the python kernel is not run");
    return;
  }
  FakeScheduler sched;
  ExecutorOptions o = TestOptions(sched);
  o.slots = 1;  // one worker: the pids below are its
  o.python.allow = true;
  RunningExecutor ex(o);
  wire::Register reg;
  REQUIRE(sched.RecvRegister(&reg));
  CHECK(reg.python_version().rfind("3.", 0) == 0);
  CHECK(std::find(reg.kernels().begin(), reg.kernels().end(), "python") != reg.kernels().end());
  sched.Ack(4);
  wire::SchedulerToExecutor work;
  Assign(&work, 1, "python", ReferenceTask("os:getpid"));
  sched.Send(work);
  ReportLog log;
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 1; }));
  REQUIRE(log.results[1].outcome() == wire::AttemptResult::OK);
  const std::string first = log.results[1].output();
  CHECK(first.rfind(std::string("TCPR\x01O", 6), 0) == 0);  // a result envelope, status OK
  // The same warm worker answers the next task: the same pid, so the same bytes.
  wire::SchedulerToExecutor again;
  Assign(&again, 2, "python", ReferenceTask("os:getpid"));
  // Not a task of the python client: the worker answers with an error
  // envelope (the task ran and raised), the attempt itself is OK.
  Assign(&again, 3, "python", "not a task");
  sched.Send(again);
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 3; }));
  CHECK(log.results[2].output() == first);
  CHECK(log.results[3].outcome() == wire::AttemptResult::OK);
  CHECK(log.results[3].output().rfind(std::string("TCPR\x01" "E", 6), 0) == 0);
  // A worker that exits mid-task fails its attempt with how it ended; the next task gets a fresh one.
  wire::SchedulerToExecutor crash;
  Assign(&crash, 4, "python", ReferenceTask("os:abort"));
  Assign(&crash, 5, "python", ReferenceTask("os:getpid"));
  sched.Send(crash);
  REQUIRE(log.Until(sched, [&] { return log.results.size() == 5; }));
  CHECK(log.results[4].outcome() == wire::AttemptResult::FAILED);
  CHECK(log.results[4].error().find("was killed by signal 6 while running the task") != std::string::npos);
  CHECK(log.results[5].outcome() == wire::AttemptResult::OK);
  CHECK(log.results[5].output() != first);
  REQUIRE(ex.Stop().ok());
}
