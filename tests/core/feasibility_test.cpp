// Feasibility: which executors could ever run a task, and what the core
// says when none can.
#include <catch2/catch.hpp>

#include <algorithm>

#include "feasibility.h"
#include "kernel_names.h"

using namespace tailcut;
using namespace tailcut::core;

namespace {

struct Fleet {
  std::map<ExecutorId, ExecutorState> execs;
  ExecutorState& Add(uint32_t slots, uint32_t gpus = 0, std::vector<std::string> kernels = {},
                     std::vector<std::pair<std::string, std::string>> labels = {}) {
    ExecutorId id = static_cast<ExecutorId>(execs.size() + 1);
    ExecutorState& e = execs[id];
    e.id = id;
    e.desc.slots = slots;
    e.desc.gpus = gpus;
    e.desc.labels = std::move(labels);
    std::sort(e.desc.labels.begin(), e.desc.labels.end());  // as Lifecycle::AddExecutor does
    e.kernels.insert(kernels.begin(), kernels.end());
    return e;
  }
};

TaskDef MakeTask(std::string kernel, uint32_t slots = 1, uint32_t gpus = 0,
                 std::vector<std::pair<std::string, std::string>> labels = {}) {
  TaskDef d;
  d.kernel = std::move(kernel);
  d.cpu_slots = slots;
  d.gpus = gpus;
  d.labels = std::move(labels);
  std::sort(d.labels.begin(), d.labels.end());  // as SortLabels does at submit
  return d;
}

JobDef JobOf(std::vector<TaskDef> tasks) {
  JobDef j;
  j.tasks = std::move(tasks);
  return j;
}

}  // namespace

TEST_CASE("labels must all be present with the same value") {
  Fleet f;
  ExecutorState& e = f.Add(4, 0, {"k"}, {{"zone", "edge"}, {"rack", "7"}});
  CHECK(LabelsMatch(e, MakeTask("k")));
  CHECK(LabelsMatch(e, MakeTask("k", 1, 0, {{"zone", "edge"}})));
  CHECK(LabelsMatch(e, MakeTask("k", 1, 0, {{"rack", "7"}, {"zone", "edge"}})));
  CHECK_FALSE(LabelsMatch(e, MakeTask("k", 1, 0, {{"zone", "core"}})));
  CHECK_FALSE(LabelsMatch(e, MakeTask("k", 1, 0, {{"zone", "edge"}, {"gpu", "a100"}})));
}

TEST_CASE("an executor is feasible when its size, gpus, kernels and labels fit") {
  Fleet f;
  ExecutorState& sl = f.Add(2, 0, {"sleep"});
  ExecutorState& mm = f.Add(8, 1, {"matmul"});  // one kernel only
  ExecutorState& none = f.Add(8, 1);            // lists no kernel: runs none
  CHECK(Feasible(sl, MakeTask("sleep", 2)));
  CHECK(Feasible(sl, MakeTask("sleep", 0)));         // 0 slots counts as 1
  CHECK_FALSE(Feasible(sl, MakeTask("sleep", 3)));   // bigger than the executor, ever
  CHECK_FALSE(Feasible(sl, MakeTask("sleep", 1, 1))); // no gpu
  CHECK(Feasible(mm, MakeTask("matmul", 8, 1)));
  CHECK_FALSE(Feasible(mm, MakeTask("sleep")));       // kernel not offered
  CHECK_FALSE(Feasible(none, MakeTask("sleep")));
  CHECK_FALSE(Feasible(none, MakeTask("matmul", 8, 1)));
}

TEST_CASE("feasibility ignores what executors run now") {
  Fleet f;
  ExecutorState& e = f.Add(2, 1, {"k"});
  e.used_slots = 2;
  e.used_gpus = 1;
  CHECK(Feasible(e, MakeTask("k", 2, 1)));
  CHECK(CheckFeasible(f.execs, MakeTask("k", 2, 1)).ok());
}

TEST_CASE("CheckFeasible says why no executor can run a task") {
  Fleet f;
  SECTION("nobody registered") {
    Status s = CheckFeasible(f.execs, MakeTask("k"));
    CHECK(s.code() == Status::Code::kFailedPrecondition);
    CHECK(s.message() == "no executor has registered with the scheduler");
  }
  SECTION("kernel not offered: lists what is, sorted and once each") {
    f.Add(4, 0, {"sleep", "matmul"});
    f.Add(4, 0, {"matmul"});
    Status s = CheckFeasible(f.execs, MakeTask("fft"));
    CHECK(s.code() == Status::Code::kNotFound);
    CHECK(s.message() == "no executor offers kernel 'fft' (offered: matmul, sleep)");
  }
  SECTION("shell not offered: names the executor flag that offers it") {
    f.Add(4, 0, {"sleep", "noop"});
    Status s = CheckFeasible(f.execs, MakeTask("shell"));
    CHECK(s.code() == Status::Code::kNotFound);
    CHECK(s.message() == "no executor runs kernel 'shell' (executors offer it only when started with --allow-shell)");
    f.Add(1, 0, {"shell"});
    CHECK(CheckFeasible(f.execs, MakeTask("shell")).ok());
  }
  SECTION("executors listing no kernels offer none") {
    f.Add(4);
    CHECK(CheckFeasible(f.execs, MakeTask("sleep")).message() == "no executor offers kernel 'sleep' (offered: none)");
  }
  SECTION("kernel offered but no executor is big enough or has the labels") {
    f.Add(4, 0, {"matmul"});
    f.Add(2, 1, {"matmul"}, {{"zone", "core"}});
    Status s = CheckFeasible(f.execs, MakeTask("matmul", 3, 1, {{"zone", "edge"}}));
    CHECK(s.code() == Status::Code::kFailedPrecondition);
    CHECK(s.message() ==
          "no executor can run a 'matmul' task needing 3 cpu slot(s), 1 gpu(s), label zone=edge (2 executors "
          "registered)");
  }
  SECTION("one fitting executor is enough") {
    f.Add(1, 0, {"matmul"});
    f.Add(4, 1, {"matmul"}, {{"zone", "edge"}});
    CHECK(CheckFeasible(f.execs, MakeTask("matmul", 3, 1, {{"zone", "edge"}})).ok());
  }
}

TEST_CASE("job validation rejects ill-formed jobs with a reason") {
  Fleet f;
  f.Add(4, 0, {"k"});
  auto msg = [&](const JobDef& j) { return ValidateJob(f.execs, j).message(); };
  CHECK(msg(JobDef{}) == "job has no tasks");
  CHECK(msg(JobOf({MakeTask("")})) == "a task has no kernel");
  TaskDef huge = MakeTask("k");
  huge.memory_mb = kMaxMemoryMb + 1;
  CHECK(msg(JobOf({huge})) == "memory_mb 1099511627777 is more than the most (1099511627776 MB, 2^40)");

  JobDef kofn = JobOf({MakeTask("k"), MakeTask("k")});
  kofn.rule.kind = CompletionKind::kKOfN;
  kofn.rule.k = 3;
  CHECK(msg(kofn) == "k_of_n needs 1 <= k <= tasks (k=3, tasks=2)");
  kofn.rule.k = 2;
  CHECK(ValidateJob(f.execs, kofn).ok());

  JobDef q = JobOf({MakeTask("k"), MakeTask("k"), MakeTask("k")});
  q.rule.kind = CompletionKind::kQuorum;
  q.rule.k = 2;
  q.rule.min_count = 3;
  CHECK(msg(q) == "quorum needs min_count <= k");
  q.rule.min_count = 1;
  q.rule.deadline_s = -1;
  CHECK(msg(q) == "quorum deadline must be >= 0");
  q.rule.deadline_s = 5;
  CHECK(ValidateJob(f.execs, q).ok());
}

TEST_CASE("job validation checks feasibility only when it can and should") {
  Fleet f;
  JobDef j = JobOf({MakeTask("k", 1, 1)});
  j.templ = MakeTask("k", 16);
  j.template_count = 2;
  CHECK(ValidateJob(f.execs, j).ok());  // no executor joined yet: wait for one
  f.Add(4, 0, {"k"});
  Status s = ValidateJob(f.execs, j);
  CHECK(s.code() == Status::Code::kFailedPrecondition);  // the first infeasible shape: 1 gpu
  CHECK(s.message().find("1 gpu(s)") != std::string::npos);
  j.tasks.clear();
  CHECK(ValidateJob(f.execs, j).message().find("16 cpu slot(s)") != std::string::npos);  // the template
  j.wait_for_resources = true;
  CHECK(ValidateJob(f.execs, j).ok());
}

TEST_CASE("job validation refuses arguments no offering executor's kernel takes") {
  using Type = KernelArgSpec::Type;
  const std::vector<KernelArgSpec> sleep_args = {{"ms", Type::kNumber, 0, 1e6}, {"seed", Type::kInteger}};
  Fleet f;
  f.Add(4, 0, {"sleep", "shell"}).desc.kernel_args["sleep"] = sleep_args;
  auto job = [](std::string kernel, std::string args) {
    TaskDef d = MakeTask(std::move(kernel));
    d.args = std::move(args);
    JobDef j = JobOf({d});
    j.templ = d;
    j.template_count = 3;
    return j;
  };
  CHECK(ValidateJob(f.execs, job("sleep", "ms=10 seed=2")).ok());
  CHECK(ValidateJob(f.execs, job("sleep", "")).ok());
  CHECK(ValidateJob(f.execs, job("sleep", "ms={index}")).ok());  // a template: its name is checked
  Status s = ValidateJob(f.execs, job("sleep", "msx=10"));
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message() ==
        "kernel 'sleep' has no argument 'msx' (it takes ms (number in [0, 1e+06]), "
        "seed (integer))");
  CHECK(ValidateJob(f.execs, job("sleep", "seed=1.5")).message().find("'seed' must be an integer") !=
        std::string::npos);
  CHECK(ValidateJob(f.execs, job("sleep", "ms=2e6")).message().find("must be in [0, 1e+06]") != std::string::npos);
  CHECK(ValidateJob(f.execs, job("shell", "anything at all")).ok());  // declares nothing: takes anything
  // One executor whose sleep takes anything (an older executor) is enough.
  f.Add(4, 0, {"sleep"});
  CHECK(ValidateJob(f.execs, job("sleep", "msx=10")).ok());
}

TEST_CASE("Feasible by kernel id answers as Feasible by name while executors come and go") {
  Fleet f;
  KernelNames names;
  f.Add(4, 0, {"noop", "sleep"});
  f.Add(4, 0, {"sleep"});
  f.Add(4, 1, {"gpu", "noop"}, {{"zone", "a"}});
  for (auto& [id, e] : f.execs) names.Offer(e.kernels, &e.kernel_bits);
  std::vector<TaskDef> tasks = {MakeTask("noop"),
                                MakeTask("sleep"),
                                MakeTask("gpu", 1, 1),
                                MakeTask("shell"),
                                MakeTask("noop", 1, 0, {{"zone", "a"}}),
                                MakeTask("noop", 8)};
  auto agree = [&] {
    for (const TaskDef& d : tasks)
      for (auto& [id, e] : f.execs) {
        INFO("executor " << id << ", kernel " << d.kernel);
        CHECK(Feasible(e, d, names.Find(d.kernel)) == Feasible(e, d));
      }
  };
  agree();
  CHECK(names.Find("shell") == KernelNames::kNone);
  CHECK(names.size() == 3);
  // The last executor offering `gpu` leaves: its id is freed, the epoch
  // moves, and a newcomer's kernel may reuse the id without being taken
  // for `gpu`.
  const uint64_t epoch = names.epoch();
  names.Withdraw(f.execs.at(3).kernel_bits);
  f.execs.erase(3);
  CHECK(names.epoch() != epoch);
  CHECK(names.Find("gpu") == KernelNames::kNone);
  CHECK(names.Find("noop") != KernelNames::kNone);  // executor 1 still offers it
  ExecutorState& shell = f.Add(2, 0, {"shell"});
  names.Offer(shell.kernels, &shell.kernel_bits);
  CHECK(names.size() == 3);
  agree();
}
