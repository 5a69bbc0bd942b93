// Kernel plugins (docs/KERNELS.md, "Kernel plugins"): the C plugin of the
// install test, loaded in process, and its twin built for another API version.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tailcut/common/config.h"
#include "tailcut/executor/executor.h"
#include "tailcut/executor/kernel_plugin_api.h"
#include "tailcut/executor/runtime.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace std::chrono_literals;

namespace {

// Runs one attempt of `spec` to its end and returns its result.
wire::AttemptResult RunOne(const KernelRegistry& kernels, AttemptSpec spec) {
  AttemptRuntime rt(RuntimeOptions{1, 1}, &kernels, nullptr, nullptr);
  rt.Submit({std::move(spec)});
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    RuntimeEvents batch;
    rt.DrainEvents(&batch);
    for (auto& r : batch.results) return r;
    std::this_thread::sleep_for(1ms);
  }
  FAIL("no result");
  return {};
}

}  // namespace

TEST_CASE("a kernel plugin's kernels join the registry with their traits and run with the attempt's identity") {
  KernelRegistry kernels = BuiltinKernels();
  auto names = LoadKernelPlugin(TAILCUT_TEST_KERNEL_PLUGIN_PATH, &kernels);
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"wordcount", "nap"});
  REQUIRE(kernels.Find("wordcount"));
  CHECK(kernels.Find("wordcount")->traits.idempotent);
  CHECK_FALSE(kernels.Find("nap")->traits.idempotent);
  CHECK(kernels.Find("nap")->traits.self_timed);

  AttemptSpec spec{41, "wordcount", "three little words"};
  spec.identity.job_id = 7;
  spec.identity.task_index = 2;
  spec.identity.task_count = 5;
  const auto dir = std::filesystem::temp_directory_path() / ("tailcut-kplugin-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  spec.output_dir = dir.string();
  wire::AttemptResult r = RunOne(kernels, spec);
  CHECK(r.outcome() == wire::AttemptResult::OK);
  CHECK(r.output() == "words=3 task=2 of 5 attempt=41");
  std::ifstream count(dir / "count.txt");
  std::string text;
  std::getline(count, text);
  CHECK(text == "3");
  std::filesystem::remove_all(dir);

  // A failing plugin kernel fails the attempt with its message.
  r = RunOne(kernels, AttemptSpec{42, "nap", "fail"});
  CHECK(r.outcome() == wire::AttemptResult::FAILED);
  CHECK(r.error() == "nap asked to fail");
  r = RunOne(kernels, AttemptSpec{43, "nap", "ms=1"});
  CHECK(r.outcome() == wire::AttemptResult::OK);
  CHECK(r.output() == "rested");
}

TEST_CASE("plugin kernels run only when allow_kernels lists them") {
  ExecutorOptions o;  // the default allow list: built-ins but shell
  o.kernel_plugins = {TAILCUT_TEST_KERNEL_PLUGIN_PATH};
  auto kernels = LoadKernelPlugins(o);
  REQUIRE(kernels.ok());
  CHECK_FALSE(kernels->Find("wordcount"));
  CHECK(kernels->MissingReason("wordcount") ==
        "kernel 'wordcount' is not enabled on this executor (not in its allow_kernels)");
  wire::AttemptResult r = RunOne(*kernels, AttemptSpec{1, "wordcount", "a b"});
  CHECK(r.outcome() == wire::AttemptResult::FAILED);

  o.allow_kernels = {"noop", "wordcount"};
  kernels = LoadKernelPlugins(o);
  REQUIRE(kernels.ok());
  CHECK(kernels->Names() == std::vector<std::string>{"noop", "wordcount"});

  // From the config: kernel_plugins is an array; allow_kernels may then name plugin kernels.
  auto cfg = Config::Parse(std::string("kernel_plugins = [\"") + TAILCUT_TEST_KERNEL_PLUGIN_PATH +
                           "\"]\nallow_kernels = \"nap\"\n");
  REQUIRE(cfg.ok());
  auto from_config = ExecutorOptionsFromConfig(*cfg);
  INFO(from_config.status().message());
  REQUIRE(from_config.ok());
  REQUIRE(cfg->CheckAllUsed().ok());
  CHECK(from_config->kernel_plugins == std::vector<std::string>{TAILCUT_TEST_KERNEL_PLUGIN_PATH});
  kernels = LoadKernelPlugins(*from_config);
  REQUIRE(kernels.ok());
  CHECK(kernels->Names() == std::vector<std::string>{"nap"});
  auto scalar = Config::Parse("kernel_plugins = \"/x.so\"\n");
  REQUIRE(scalar.ok());
  auto bad = ExecutorOptionsFromConfig(*scalar);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("kernel_plugins must be an array") != std::string::npos);
}

TEST_CASE("a kernel plugin built for another API version, or missing, or clashing, is refused by name") {
  KernelRegistry kernels = BuiltinKernels();
  auto stale = LoadKernelPlugin(TAILCUT_STALE_KERNEL_PLUGIN_PATH, &kernels);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.status().message() == std::string("kernel plugin '") + TAILCUT_STALE_KERNEL_PLUGIN_PATH +
                                        "': kernel plugin API version " +
                                        std::to_string(TAILCUT_KERNEL_PLUGIN_API_VERSION + 1) +
                                        ", this tailcut supports " +
                                        std::to_string(TAILCUT_KERNEL_PLUGIN_API_VERSION) + " (rebuild the plugin)");
  CHECK_FALSE(kernels.Knows("wordcount"));

  auto missing = LoadKernelPlugin("/nonexistent/libk.so", &kernels);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "kernel plugin '/nonexistent/libk.so': no such file");

  // The same names twice: refused, naming the clash.
  REQUIRE(LoadKernelPlugin(TAILCUT_TEST_KERNEL_PLUGIN_PATH, &kernels).ok());
  auto twice = LoadKernelPlugin(TAILCUT_TEST_KERNEL_PLUGIN_PATH, &kernels);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("kernel 'wordcount' is already registered") != std::string::npos);
}
