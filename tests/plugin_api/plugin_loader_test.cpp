// External plugins: the example loads and acts; broken ones give clear errors.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sim.h"
#include "tailcut/plugins/plugin_api.h"
#include "tailcut/policies/registry.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;
using tailcut::testing::Sim;

TEST_CASE("the example plugin loads, reads its parameters and proposes a copy") {
  auto cfg = Config::Parse("[policies.fixed_delay]\ndelay_s = 0.5\n");
  REQUIRE(cfg.ok());
  auto p = LoadPluginPolicy(TAILCUT_EXAMPLE_PLUGIN_PATH, "fixed_delay", *cfg);
  REQUIRE(p.ok());
  CHECK((*p)->name() == "fixed_delay");
  PolicyChain c;
  c.push_back(std::move(p).value());
  Sim s(Sim::Opts(), std::move(c));
  s.Exec(1, 5.0);
  s.Exec(1);
  auto j = s.h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(j.ok());
  s.Sync();
  REQUIRE(s.RunUntil(*j, 10));
  CHECK(s.Copies() == 1);
  CHECK(s.h.clock.Now() < 2);  // copy at ~0.6 s on the fast executor
  CHECK(cfg->Unused().empty());
}

TEST_CASE("plugins in a chain: plugin:PATH#NAME and [[policies.external]]") {
  auto c1 = MakePolicyChain(std::string("spark,plugin:") + TAILCUT_EXAMPLE_PLUGIN_PATH + "#fixed_delay", Config());
  REQUIRE(c1.ok());
  REQUIRE(c1->size() == 2);
  CHECK((*c1)[1]->name() == "fixed_delay");
  auto c2 = MakePolicyChain(std::string("plugin:") + TAILCUT_EXAMPLE_PLUGIN_PATH, Config());
  REQUIRE(c2.ok());

  auto cfg = Config::Parse(std::string("[[policies.external]]\npath = \"") + TAILCUT_EXAMPLE_PLUGIN_PATH +
                           "\"\nname = \"fixed_delay\"\ndelay_s = 2.0\n");
  REQUIRE(cfg.ok());
  auto c3 = MakePolicyChain("clone,external", *cfg);
  REQUIRE(c3.ok());
  CHECK(c3->size() == 2);
  CHECK(cfg->Unused().empty());

  auto badp = Config::Parse("[policies.fixed_delay]\ndelay_s = -1\n");
  auto c4 = MakePolicyChain(std::string("plugin:") + TAILCUT_EXAMPLE_PLUGIN_PATH + "#fixed_delay", *badp);
  REQUIRE_FALSE(c4.ok());
  CHECK(c4.status().message().find("delay_s") != std::string::npos);
  auto c5 = MakePolicyChain(std::string("plugin:") + TAILCUT_EXAMPLE_PLUGIN_PATH + "#nosuch", Config());
  REQUIRE_FALSE(c5.ok());
  CHECK(c5.status().message().find("nosuch") != std::string::npos);
}

TEST_CASE("broken plugins give clear errors naming the file") {
  auto missing = LoadPluginPolicy("/nonexistent/libnope.so", "x", Config());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("/nonexistent/libnope.so") != std::string::npos);
  CHECK(missing.status().message().find("no such file") != std::string::npos);

  auto version = LoadPluginPolicy(TAILCUT_BAD_VERSION_PLUGIN_PATH, "", Config());
  REQUIRE_FALSE(version.ok());
  CHECK(version.status().message().find(TAILCUT_BAD_VERSION_PLUGIN_PATH) != std::string::npos);
  // The bad plugin reports this host's version + 41.
  CHECK(version.status().message().find("API version " + std::to_string(TAILCUT_PLUGIN_API_VERSION + 41)) !=
        std::string::npos);

  auto sym = LoadPluginPolicy(TAILCUT_MISSING_SYMBOL_PLUGIN_PATH, "", Config());
  REQUIRE_FALSE(sym.ok());
  CHECK(sym.status().message().find("tailcut_plugin_create") != std::string::npos);

  // Not a shared library at all.
  auto junk = LoadPluginPolicy(TAILCUT_NOT_A_PLUGIN_PATH, "", Config());
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.status().message().find("cannot load") != std::string::npos);

  auto chain = MakePolicyChain("spark,plugin:/nonexistent/lib.so", Config());
  REQUIRE_FALSE(chain.ok());
  CHECK(chain.status().message().find("/nonexistent/lib.so") != std::string::npos);
}

TEST_CASE("a plugin path resolves the same way for the check and the load: relative to the current directory") {
  namespace fs = std::filesystem;
  const fs::path plugin = TAILCUT_EXAMPLE_PLUGIN_PATH;
  auto abs = ResolvePluginPath(plugin.string());
  REQUIRE(abs.ok());
  CHECK(*abs == plugin.lexically_normal().string());

  const fs::path before = fs::current_path();
  fs::current_path(plugin.parent_path());
  struct Restore {
    fs::path dir;
    ~Restore() { fs::current_path(dir); }
  } restore{before};
  // A bare file name: the file in this directory. dlopen alone would have
  // searched the library path for it (and not found it) although the
  // existence check passed.
  const std::string bare = plugin.filename().string();
  auto rel = ResolvePluginPath(bare);
  REQUIRE(rel.ok());
  CHECK(*rel == *abs);
  auto loaded = LoadPluginPolicy(bare, "fixed_delay", Config());
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK((*loaded)->name() == "fixed_delay");
  auto dotted = ResolvePluginPath("./sub/../" + bare);
  REQUIRE(dotted.ok());
  CHECK(*dotted == *abs);
  auto chained = MakePolicyChain("plugin:" + bare + "#fixed_delay", Config());
  INFO(chained.status().message());
  CHECK(chained.ok());

  // Never the dynamic linker's search path: a library it would find is not
  // a plugin here unless it is in this directory.
  auto libc = ResolvePluginPath("libc.so.6");
  REQUIRE_FALSE(libc.ok());
  CHECK(libc.status().code() == Status::Code::kNotFound);
  CHECK(libc.status().message() ==
        "plugin 'libc.so.6' (" + (plugin.parent_path() / "libc.so.6").string() + "): no such file");
  CHECK_FALSE(LoadPluginPolicy("libc.so.6", "", Config()).ok());
  auto dir = ResolvePluginPath(".");
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.status().message().find("not a regular file") != std::string::npos);
}

TEST_CASE("a plugin policy that throws is disabled by the core, and the rest of the chain still acts") {
  auto cfg = Config::Parse("[policies.fixed_delay]\ndelay_s = 0.5\n");
  REQUIRE(cfg.ok());
  auto chain = MakePolicyChain(
      std::string("plugin:") + TAILCUT_THROWING_PLUGIN_PATH + ",plugin:" + TAILCUT_EXAMPLE_PLUGIN_PATH + "#fixed_delay",
      *cfg);
  REQUIRE(chain.ok());
  REQUIRE(chain->size() == 2);
  Sim s(Sim::Opts(), std::move(chain).value());
  s.Exec(1, 5.0);
  s.Exec(1);
  auto j = s.h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(j.ok());
  s.Sync();
  REQUIRE(s.RunUntil(*j, 10));  // the scheduler core survived the exception
  CHECK(s.h.core.DisabledPolicies() ==
        std::vector<std::string>{"throwing: OnTick threw: deliberate failure in the throwing plugin"});
  CHECK(s.Copies() == 1);  // fixed_delay, after it in the chain, still acted
}
