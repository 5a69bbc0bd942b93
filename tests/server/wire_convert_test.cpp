// Every number read from the wire is validated before the core sees it,
// with an error naming the field (issue #11).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "wire_convert.h"

using namespace tailcut;

namespace {

wire::JobSpec Fanout(uint32_t n) {
  wire::JobSpec spec;
  spec.mutable_template_()->set_kernel("noop");
  spec.set_template_count(n);
  return spec;
}

// The error of converting `spec`; "" when it converts.
std::string ErrorOf(const wire::JobSpec& spec) {
  auto d = JobDefFromWire(spec);
  return d.ok() ? "" : d.status().message();
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("wire: a template asking for more tasks than any job may hold is TOO_LARGE before anything is built") {
  wire::JobSpec spec = Fanout(50'000'001);
  CHECK(TaskCountOf(spec) == 50'000'001);
  auto d = JobDefFromWire(spec);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == Status::Code::kTooLarge);
  CHECK(d.status().message() == "job has 50000001 tasks; the limit is 50000000");
  CHECK(ErrorCodeFor(d.status(), true) == wire::Error::TOO_LARGE);
  spec.add_tasks()->set_kernel("noop");  // explicit tasks count too
  CHECK(TaskCountOf(spec) == 50'000'002);
}

TEST_CASE("wire: seconds must be finite, non-negative and below a year, naming the field") {
  for (double bad : {kNan, kInf, -kInf, -1.0, 1e12}) {
    wire::JobSpec job = Fanout(2);
    job.set_timeout_s(bad);
    CHECK(ErrorOf(job).rfind("timeout_s must be a number of seconds", 0) == 0);
    wire::JobSpec deadline = Fanout(2);
    deadline.mutable_rule()->set_deadline_s(bad);
    CHECK(ErrorOf(deadline).rfind("rule.deadline_s must be", 0) == 0);
    wire::JobSpec templ = Fanout(2);
    templ.mutable_template_()->set_timeout_s(bad);
    CHECK(ErrorOf(templ).rfind("template.timeout_s must be", 0) == 0);
    wire::JobSpec task = Fanout(0);
    task.add_tasks()->set_kernel("noop");
    task.add_tasks()->set_timeout_s(bad);
    CHECK(ErrorOf(task).rfind("tasks[1].timeout_s must be", 0) == 0);
  }
  wire::JobSpec fine = Fanout(2);
  fine.set_timeout_s(3600);
  fine.mutable_template_()->set_timeout_s(0.5);
  CHECK(ErrorOf(fine) == "");
}

TEST_CASE("wire: input_size, slots, gpus and max_attempts are checked, naming the field") {
  for (double bad : {kNan, kInf, -1.0}) {
    wire::JobSpec spec = Fanout(1);
    spec.mutable_template_()->mutable_features()->set_input_size(bad);
    CHECK(ErrorOf(spec).rfind("template.features.input_size must be a finite number >= 0", 0) == 0);
  }
  wire::JobSpec slots = Fanout(1);
  slots.mutable_template_()->mutable_demand()->set_cpu_slots(4'000'000'000u);
  CHECK(ErrorOf(slots) == "template.demand.cpu_slots is 4000000000; the limit is 65536");
  wire::JobSpec gpus = Fanout(0);
  gpus.add_tasks()->mutable_demand()->set_gpus(1000);
  CHECK(ErrorOf(gpus) == "tasks[0].demand.gpus is 1000; the limit is 64");
  wire::JobSpec attempts = Fanout(1);
  attempts.set_max_attempts(70000);  // would wrap the core's 16-bit failure count
  CHECK(ErrorOf(attempts) == "max_attempts is 70000; the limit is 1000");
}

TEST_CASE("wire: kernel and task class names are capped on submit, naming the field") {
  wire::JobSpec cls = Fanout(1);
  cls.mutable_template_()->mutable_features()->set_task_class(std::string(kMaxWireNameBytes + 1, 'c'));
  CHECK(CheckNames(cls).message() == "template.features.task_class is 257 bytes; the limit is 256");
  CHECK(ErrorOf(cls) == "");  // a journaled job read back is not refused for it
  wire::JobSpec kernel = Fanout(0);
  kernel.add_tasks();
  kernel.add_tasks()->set_kernel(std::string(1000, 'k'));
  CHECK(CheckNames(kernel).message() == "tasks[1].kernel is 1000 bytes; the limit is 256");
  wire::JobSpec fine = Fanout(1);
  fine.mutable_template_()->mutable_features()->set_task_class(std::string(kMaxWireNameBytes, 'c'));
  CHECK(CheckNames(fine).ok());
}

TEST_CASE("wire: reported run times that are no time at all become 0 (the core measures)") {
  CHECK(SanitizeRunSeconds(1.5) == 1.5);
  CHECK(SanitizeRunSeconds(0) == 0);
  for (double bad : {kNan, kInf, -kInf, -0.5, 1e300}) CHECK(SanitizeRunSeconds(bad) == 0);
}

TEST_CASE("wire: caps map to BUSY, hard limits to TOO_LARGE") {
  CHECK(ErrorCodeFor(Status::ResourceExhausted("x"), true) == wire::Error::BUSY);
  CHECK(ErrorCodeFor(Status::TooLarge("x"), true) == wire::Error::TOO_LARGE);
  CHECK(ErrorCodeFor(Status::InvalidArgument("x"), true) == wire::Error::INVALID_ARGUMENT);
}

TEST_CASE("wire: a task's own share must lie inside its total, and not in a job the scheduler divides") {
  wire::JobSpec spec = Fanout(1);
  auto* sh = spec.mutable_template_()->mutable_share();
  sh->set_begin(10);
  sh->set_count(5);
  sh->set_total(12);
  CHECK(ErrorOf(spec) == "template.share [10, +5) is outside its total 12");
  sh->set_count(2);
  auto d = JobDefFromWire(spec);
  REQUIRE(d.ok());
  CHECK(d->templ.share.begin == 10);
  CHECK(d->templ.share.count == 2);
  CHECK(d->templ.share.total == 12);
  spec.set_divisible_units(12);
  CHECK(ErrorOf(spec).find("cannot carry a share of their own") != std::string::npos);
}

TEST_CASE("wire: divisible_units reaches the job (the core checks it against the tasks and rule)") {
  wire::JobSpec spec = Fanout(4);
  spec.set_divisible_units(6000);
  auto d = JobDefFromWire(spec);
  REQUIRE(d.ok());
  CHECK(d->divisible_units == 6000);
  CHECK(JobDefFromWire(Fanout(4))->divisible_units == 0);
}

namespace {

// A protobuf length-delimited field: tag, varint length, bytes.
std::string Field(int number, const std::string& bytes) {
  std::string out(1, static_cast<char>((number << 3) | 2));
  for (uint64_t n = bytes.size(); ; n >>= 7) {
    if (n < 0x80) {
      out += static_cast<char>(n);
      break;
    }
    out += static_cast<char>((n & 0x7f) | 0x80);
  }
  return out + bytes;
}

}  // namespace

TEST_CASE("wire: a submit's task count is read from the frame's field headers before it is parsed") {
  wire::ClientRequest req;
  req.set_version(1);
  wire::JobSpec& spec = *req.mutable_submit()->mutable_job();
  spec.set_name("x");
  for (int i = 0; i < 7; ++i) spec.add_tasks()->set_kernel("k");
  spec.mutable_template_()->set_kernel("t");
  spec.set_template_count(1000);
  req.set_request_id(77);
  std::string bytes = req.SerializeAsString();
  uint64_t id = 0;
  CHECK(SubmitTaskCountOfFrame(bytes.data(), bytes.size(), &id) == TaskCountOf(spec));
  CHECK(id == 77);
  wire::ClientRequest status;
  status.mutable_status()->set_job_id(3);
  std::string other = status.SerializeAsString();
  CHECK(SubmitTaskCountOfFrame(other.data(), other.size()) == 0);
  CHECK(SubmitTaskCountOfFrame("\xff\xff\xff", 3) == 0);  // ill-formed: no count, the parse refuses it

  // 10M empty TaskSpecs: a 20 MB frame, counted without building any.
  const size_t n = 10'000'000;
  std::string tasks;
  tasks.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) tasks.append("\x12\x00", 2);
  std::string frame = Field(wire::ClientRequest::kSubmitFieldNumber, Field(wire::SubmitJob::kJobFieldNumber, tasks));
  tasks.clear();
  tasks.shrink_to_fit();
  REQUIRE(frame.size() > 20'000'000);
  CHECK(SubmitTaskCountOfFrame(frame.data(), frame.size()) == n);
}

TEST_CASE("wire: deterministic bytes of a job body do not depend on the order its labels arrived in") {
  wire::JobSpec a, b;
  for (int i = 0; i < 50; ++i) (*a.mutable_template_()->mutable_demand()->mutable_labels())["k" + std::to_string(i)] = "v";
  for (int i = 49; i >= 0; --i) (*b.mutable_template_()->mutable_demand()->mutable_labels())["k" + std::to_string(i)] = "v";
  CHECK(DeterministicBytes(a) == DeterministicBytes(b));
  b.set_name("other");
  CHECK(DeterministicBytes(a) != DeterministicBytes(b));
}

TEST_CASE("wire: after and task inputs reach the JobDef - a waiting job is JOB_QUEUED, naming its parents") {
  wire::JobSpec spec = Fanout(2);
  spec.add_after(7);
  wire::TaskRef* r = spec.mutable_template_()->add_inputs();
  r->set_job_id(7);
  r->set_task_index(3);
  auto def = JobDefFromWire(spec);
  REQUIRE(def.ok());
  CHECK(def->after == std::vector<JobId>{7});
  REQUIRE(def->templ.inputs.size() == 1);
  CHECK(def->templ.inputs[0].job == 7);
  CHECK(def->templ.inputs[0].task == 3);
  CHECK_FALSE(def->templ.inputs[0].all);
  spec.mutable_template_()->mutable_inputs(0)->set_job_id(0);
  auto zero = JobDefFromWire(spec);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message().find("template.inputs") != std::string::npos);

  JobStatusInfo info;
  info.state = JobState::kRunning;
  info.after = {7, 8};
  info.waiting_for = {8};
  wire::JobStatus st;
  JobStatusToWire(info, &st);
  CHECK(st.state() == wire::JOB_QUEUED);
  REQUIRE(st.waiting_for_size() == 1);
  CHECK(st.waiting_for(0) == 8);
  CHECK(st.after_size() == 2);
  info.waiting_for.clear();
  JobStatusToWire(info, &st);
  CHECK(st.state() == wire::JOB_RUNNING);
}

TEST_CASE("wire: a job's priority is carried, and one outside -1000..1000 is refused naming it") {
  wire::JobSpec spec = Fanout(1);
  spec.set_priority(-1000);
  auto d = JobDefFromWire(spec);
  REQUIRE(d.ok());
  CHECK(d->priority == -1000);
  spec.set_priority(1001);
  CHECK(ErrorOf(spec).find("priority is 1001") != std::string::npos);
  JobStatusInfo info;
  info.priority = 3;
  info.copies_preempted = 2;
  wire::JobStatus out;
  JobStatusToWire(info, &out);
  CHECK(out.priority() == 3);
  CHECK(out.copies_preempted() == 2);
}
