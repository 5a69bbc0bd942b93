#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "tailcut/client/client.h"
#include "tailcut/client/pipeline.h"

using namespace tailcut;

TEST_CASE("the example job files load") {
  auto fan = LoadJobFile(TAILCUT_SOURCE_DIR "/configs/jobs/fanout.toml");
  REQUIRE(fan.ok());
  CHECK(fan->template_count() == 200);
  CHECK(fan->template_().kernel() == "sleep");
  auto kofn = LoadJobFile(TAILCUT_SOURCE_DIR "/configs/jobs/k_of_n.toml");
  REQUIRE(kofn.ok());
  CHECK(kofn->rule().kind() == wire::CompletionRule::K_OF_N);
  CHECK(kofn->rule().k() == 8);
  auto mixed = LoadJobFile(TAILCUT_SOURCE_DIR "/configs/jobs/mixed.toml");
  REQUIRE(mixed.ok());
  REQUIRE(mixed->tasks_size() == 3);
  CHECK(mixed->tasks(0).features().input_size() == 128);
  CHECK(mixed->tasks(2).demand().cpu_slots() == 1);
  CHECK(mixed->return_outputs());
  auto out = LoadJobFile(TAILCUT_SOURCE_DIR "/configs/jobs/output_dir.toml");
  REQUIRE(out.ok());
  CHECK(out->output_dir() == "/tmp/tailcut-out");
  CHECK(out->template_().kernel() == "shell");
  CHECK((out->has_idempotent() && out->idempotent()));
}

TEST_CASE("bad job files say what is wrong") {
  std::string path = "/tmp/tailcut-job-test.toml";
  auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    auto j = LoadJobFile(path);
    std::remove(path.c_str());
    return j;
  };
  auto typo = load("name = \"x\"\ncuont = 3\n[template]\nkernel = \"noop\"\n");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.status().message().find("cuont") != std::string::npos);
  auto rule = load("rule = \"some\"\n[template]\nkernel = \"noop\"\n");
  REQUIRE_FALSE(rule.ok());
  CHECK(rule.status().message().find("rule") != std::string::npos);
  auto labelled = load("[[task]]\nkernel = \"noop\"\n[task.labels]\nzone = \"edge\"\n");
  REQUIRE(labelled.ok());
  CHECK(labelled->tasks(0).demand().labels().at("zone") == "edge");
  auto empty = load("name = \"nothing\"\n");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().message().find("no tasks") != std::string::npos);
  CHECK_FALSE(LoadJobFile("/nonexistent/job.toml").ok());
}

TEST_CASE("divisible_units in a job file reaches the spec, a negative one is an error") {
  std::string path = "/tmp/tailcut-job-test-divisible.toml";
  auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    auto j = LoadJobFile(path);
    std::remove(path.c_str());
    return j;
  };
  auto ok = load("count = 4\ndivisible_units = 6000\n[template]\nkernel = \"gradient_worker\"\n");
  REQUIRE(ok.ok());
  CHECK(ok->divisible_units() == 6000);
  CHECK(load("[template]\nkernel = \"noop\"\n")->divisible_units() == 0);
  auto neg = load("count = 4\ndivisible_units = -1\n[template]\nkernel = \"noop\"\n");
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.status().message().find("divisible_units") != std::string::npos);
}

namespace {

StatusOr<wire::JobSpec> FromText(const std::string& text) { return ParseJobFile(text, "test.toml"); }

}  // namespace

TEST_CASE("a job file's after and inputs reach the spec - bad ones say what is wrong") {
  auto j = FromText("after = [3, 4]\n[template]\nkernel = \"noop\"\ninputs = [\"3:0\", \"4:*\"]\n");
  REQUIRE(j.ok());
  REQUIRE(j->after_size() == 2);
  CHECK(j->after(0) == 3);
  CHECK(j->after(1) == 4);
  REQUIRE(j->template_().inputs_size() == 2);
  CHECK(j->template_().inputs(0).job_id() == 3);
  CHECK(j->template_().inputs(0).task_index() == 0);
  CHECK_FALSE(j->template_().inputs(0).all_tasks());
  CHECK(j->template_().inputs(1).all_tasks());
  auto zero = FromText("after = [0]\n[template]\nkernel = \"noop\"\n");
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message().find("after.0") != std::string::npos);
  auto word = FromText("after = [\"map\"]\n[template]\nkernel = \"noop\"\n");
  REQUIRE_FALSE(word.ok());
  CHECK(word.status().message().find("'map' is not a job id") != std::string::npos);
  auto input = FromText("[template]\nkernel = \"noop\"\ninputs = [\"3\"]\n");
  REQUIRE_FALSE(input.ok());
  CHECK(input.status().message().find("JOB:TASK") != std::string::npos);
  auto task = FromText("[template]\nkernel = \"noop\"\ninputs = [\"3:x\"]\n");
  REQUIRE_FALSE(task.ok());
  CHECK(task.status().message().find("'x' is not a task index") != std::string::npos);
}

TEST_CASE("the example pipeline loads: stages in order, after and inputs as stage positions, own task classes") {
  REQUIRE(IsPipelineFile(TAILCUT_SOURCE_DIR "/configs/jobs/pipeline.toml"));
  CHECK_FALSE(IsPipelineFile(TAILCUT_SOURCE_DIR "/configs/jobs/fanout.toml"));
  auto p = LoadPipelineFile(TAILCUT_SOURCE_DIR "/configs/jobs/pipeline.toml");
  INFO(p.status().message());
  REQUIRE(p.ok());
  CHECK(p->name == "squares");
  REQUIRE(p->stages.size() == 2);
  CHECK(p->stages[0].name == "map");
  CHECK(p->stages[1].name == "reduce");
  CHECK(p->stages[1].after == std::vector<size_t>{0});
  CHECK(p->stages[0].spec.template_count() == 8);
  CHECK(p->stages[0].spec.return_outputs());  // its outputs are taken: kept
  CHECK(p->stages[0].spec.template_().features().task_class() == "squares.map");
  CHECK(p->stages[1].spec.template_().features().task_class() == "squares.reduce");
  CHECK(p->stages[1].spec.name() == "squares/reduce");
  REQUIRE(p->stages[1].spec.template_().inputs_size() == 1);
  CHECK(p->stages[1].spec.template_().inputs(0).job_id() == 1);  // stage 0, until submitted
  CHECK(p->stages[1].spec.template_().inputs(0).all_tasks());
}

TEST_CASE("pipeline files: stages listed children first are reordered - cycles, unknown stages and typos are errors") {
  auto p = ParsePipeline(
      "[[stage]]\nname = \"b\"\nafter = [\"a\"]\n[stage.template]\nkernel = \"noop\"\n"
      "[[stage]]\nname = \"a\"\n[stage.template]\nkernel = \"noop\"\n",
      "two.toml");
  REQUIRE(p.ok());
  CHECK(p->name == "two");
  REQUIRE(p->stages.size() == 2);
  CHECK(p->stages[0].name == "a");
  CHECK(p->stages[1].after == std::vector<size_t>{0});
  auto cycle = ParsePipeline(
      "[[stage]]\nname = \"a\"\nafter = [\"b\"]\n[stage.template]\nkernel = \"noop\"\n"
      "[[stage]]\nname = \"b\"\nafter = [\"a\"]\n[stage.template]\nkernel = \"noop\"\n"
      "[[stage]]\nname = \"c\"\n[stage.template]\nkernel = \"noop\"\n",
      "cycle.toml");
  REQUIRE_FALSE(cycle.ok());
  CHECK(cycle.status().message().find("the stages a, b wait for each other (a cycle)") != std::string::npos);
  auto self = ParsePipeline("[[stage]]\nname = \"a\"\nafter = [\"a\"]\n[stage.template]\nkernel = \"noop\"\n", "s");
  REQUIRE_FALSE(self.ok());
  CHECK(self.status().message().find("names itself") != std::string::npos);
  auto unknown =
      ParsePipeline("[[stage]]\nname = \"a\"\n[stage.template]\nkernel = \"noop\"\ninputs = [\"m:*\"]\n", "u");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("no stage named 'm'") != std::string::npos);
  auto typo = ParsePipeline("[[stage]]\nname = \"a\"\nafetr = [\"b\"]\n[stage.template]\nkernel = \"noop\"\n", "t");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.status().message().find("afetr") != std::string::npos);
  auto twice = ParsePipeline(
      "[[stage]]\nname = \"a\"\n[stage.template]\nkernel = \"noop\"\n"
      "[[stage]]\nname = \"a\"\n[stage.template]\nkernel = \"noop\"\n",
      "d");
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("two stages are named 'a'") != std::string::npos);
  auto nameless = ParsePipeline("[[stage]]\n[stage.template]\nkernel = \"noop\"\n", "n");
  REQUIRE_FALSE(nameless.ok());
}

TEST_CASE("a pipeline's name goes into request keys as is: only plain characters") {
  auto bad =
      ParsePipeline("name = \"my \\\"run\\\"\"\n[[stage]]\nname = \"a\"\n[stage.template]\nkernel = \"noop\"\n", "p");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("pipeline name") != std::string::npos);
}

TEST_CASE("memory_mb and gpus in a job file reach the spec, and bad memory amounts are errors naming the key") {
  auto j =
      ParseJobFile("[[task]]\nkernel = \"shell\"\nmemory_mb = 2048\ngpus = 2\n[template]\nkernel = \"noop\"\n", "t");
  REQUIRE(j.ok());
  CHECK(j->tasks(0).demand().memory_mb() == 2048);
  CHECK(j->tasks(0).demand().gpus() == 2);
  CHECK(j->template_().demand().memory_mb() == 0);
  for (const char* bad : {"-1", "1.5", "nan", "1099511627777"}) {
    auto b = ParseJobFile(std::string("[template]\nkernel = \"noop\"\nmemory_mb = ") + bad + "\n", "t");
    INFO(bad);
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().message().find("memory_mb") != std::string::npos);
  }
}

TEST_CASE("priority in a job file reaches the spec, one out of range is an error") {
  auto ok = ParseJobFile("priority = -7\n[template]\nkernel = \"noop\"\n", "t.toml");
  REQUIRE(ok.ok());
  CHECK(ok->priority() == -7);
  CHECK(ParseJobFile("[template]\nkernel = \"noop\"\n", "t.toml")->priority() == 0);
  auto bad = ParseJobFile("priority = 1001\n[template]\nkernel = \"noop\"\n", "t.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("priority") != std::string::npos);
}
