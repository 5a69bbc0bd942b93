// Wait, copy or restart a lagging attempt by expected cost (Mantri's rule:
// a hopeless attempt is restarted on its own slot, slot free or not).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "mitigation_cost.h"

using namespace tailcut::policy_util;

namespace {
LagFacts Lag(double p, double time_left, double fresh, bool slot_free) { return {p, time_left, fresh, slot_free}; }
}  // namespace

TEST_CASE("an attempt that is probably not a straggler is left alone") {
  MitigationCostOptions o;
  CHECK(ChooseMitigation(Lag(o.act_p / 2, 10, 1, true), o) == Mitigation::kWait);
  CHECK(ChooseMitigation(Lag(o.act_p / 2, 10, 1, false), o) == Mitigation::kWait);
}

TEST_CASE("with a free slot a likely straggler gets a copy") {
  MitigationCostOptions o;
  // Likely late, but not far behind a fresh run: the original may still win.
  CHECK(ChooseMitigation(Lag(o.restart_p, o.restart_ratio * 0.9, 1, true), o) == Mitigation::kCopy);
  // Far behind, but not certain enough to give up on it.
  CHECK(ChooseMitigation(Lag((o.act_p + o.restart_p) / 2, o.restart_ratio * 3, 1, true), o) == Mitigation::kCopy);
}

TEST_CASE("Mantri - an attempt far behind a fresh run with high probability is restarted, slot or not") {
  MitigationCostOptions o;
  CHECK(ChooseMitigation(Lag(o.restart_p, o.restart_ratio * 1.1, 1, true), o) == Mitigation::kRestart);
  CHECK(ChooseMitigation(Lag(o.restart_p, o.restart_ratio * 1.1, 1, false), o) == Mitigation::kRestart);
}

TEST_CASE("without a free slot a hopeless attempt restarts on its own slot and a likely straggler waits") {
  MitigationCostOptions o;
  double likely = (o.act_p + o.restart_p) / 2;  // likely, not certain
  CHECK(ChooseMitigation(Lag(likely, o.restart_ratio * 1.5, 1, true), o) == Mitigation::kCopy);
  CHECK(ChooseMitigation(Lag(likely, o.restart_ratio * 1.5, 1, false), o) == Mitigation::kWait);
  CHECK(ChooseMitigation(Lag(o.restart_p, o.restart_ratio * 1.5, 1, false), o) == Mitigation::kRestart);
  // Certain but close to done: relaunching would take longer than waiting.
  CHECK(ChooseMitigation(Lag(1, 0.5, 1, false), o) == Mitigation::kWait);
}

TEST_CASE("do no harm - no copy for an attempt a fresh one is not expected to beat") {
  MitigationCostOptions o;
  // Certainly a straggler by the threshold, but nearly done next to a fresh run.
  CHECK(ChooseMitigation(Lag(1, 0.9 * o.copy_ratio, 1, true), o) == Mitigation::kWait);
  CHECK(ChooseMitigation(Lag(1, 1.1 * o.copy_ratio, 1, true), o) == Mitigation::kCopy);
  o.copy_ratio = 0;  // off: any likely straggler may get a copy
  CHECK(ChooseMitigation(Lag(1, 0.01, 1, true), o) == Mitigation::kCopy);
}

TEST_CASE("with restart off only copies and waiting remain") {
  MitigationCostOptions o;
  o.restart = false;
  CHECK(ChooseMitigation(Lag(1, 100, 1, true), o) == Mitigation::kCopy);
  CHECK(ChooseMitigation(Lag(1, 100, 1, false), o) == Mitigation::kWait);
}

TEST_CASE("unknown or nonsense estimates mean waiting") {
  MitigationCostOptions o;
  CHECK(ChooseMitigation(Lag(1, 100, 0, true), o) == Mitigation::kWait);  // fresh run time unknown
  CHECK(ChooseMitigation(Lag(std::nan(""), 100, 1, true), o) == Mitigation::kWait);
  CHECK(ChooseMitigation(Lag(1, std::nan(""), 1, false), o) == Mitigation::kWait);
  CHECK(ChooseMitigation(Lag(1, INFINITY, 1, false), o) == Mitigation::kWait);
  CHECK(std::string(MitigationName(Mitigation::kRestart)) == "restart");
}
