// External plugins: the example loads and acts; broken ones give clear errors.
#include <catch2/catch.hpp>

#include "sim.h"
#include "tailcut/plugins/plugin_api.h"
#include "tailcut/plugins/registry.h"

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
  CHECK(version.status().message().find("API version 42") != std::string::npos);

  auto sym = LoadPluginPolicy(TAILCUT_MISSING_SYMBOL_PLUGIN_PATH, "", Config());
  REQUIRE_FALSE(sym.ok());
  CHECK(sym.status().message().find("tailcut_plugin_create") != std::string::npos);

  // Not a shared library at all.
  auto junk = LoadPluginPolicy(__FILE__, "", Config());
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.status().message().find("cannot load") != std::string::npos);

  auto chain = MakePolicyChain("spark,plugin:/nonexistent/lib.so", Config());
  REQUIRE_FALSE(chain.ok());
  CHECK(chain.status().message().find("/nonexistent/lib.so") != std::string::npos);
}
