// Shared helpers for the simulator tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim::testing {

inline Scenario ScenarioFrom(const std::string& toml) {
  auto cfg = Config::Parse(toml, "test");
  REQUIRE(cfg.ok());
  auto sc = ParseScenario(std::move(cfg).value(), ".");
  INFO(sc.status().message());
  REQUIRE(sc.ok());
  return std::move(sc).value();
}

inline Scenario ScenarioFile(const std::string& name) {
  auto sc = LoadScenario(std::string(TAILCUT_SOURCE_DIR) + "/configs/scenarios/" + name);
  INFO(sc.status().message());
  REQUIRE(sc.ok());
  return std::move(sc).value();
}

inline SimResult Run(const Scenario& sc, PolicyChain chain = {}, uint64_t seed = 1) {
  Simulator sim(sc, std::move(chain), seed);
  return sim.Run();
}

inline double Harmonic(int n) {
  double h = 0;
  for (int i = 1; i <= n; ++i) h += 1.0 / i;
  return h;
}

}  // namespace tailcut::sim::testing
