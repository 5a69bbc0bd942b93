#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "tailcut/client/client.h"

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
