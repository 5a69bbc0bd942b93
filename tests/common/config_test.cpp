#include <catch2/catch.hpp>

#include "tailcut/common/config.h"
#include "tailcut/common/kernel_args.h"

using tailcut::Config;

TEST_CASE("config reads typed keys with defaults") {
  auto c = Config::Parse("[scheduler]\nport = 5555\nratio = 0.5\nname = \"x\"\n[[policies]]\nname = \"spark\"\n[[policies]]\nname = \"hedge\"\n");
  REQUIRE(c.ok());
  int64_t port = 1;
  double ratio = 0, missing = 7;
  std::string name;
  REQUIRE(c->Get("scheduler.port", &port).ok());
  REQUIRE(c->Get("scheduler.ratio", &ratio).ok());
  REQUIRE(c->Get("scheduler.name", &name).ok());
  REQUIRE(c->Get("scheduler.missing", &missing).ok());
  CHECK(port == 5555);
  CHECK(ratio == 0.5);
  CHECK(name == "x");
  CHECK(missing == 7);
  CHECK(c->ArraySize("policies") == 2);
  std::string p1;
  REQUIRE(c->Get("policies.1.name", &p1).ok());
  CHECK(p1 == "hedge");
  CHECK_FALSE(c->CheckAllUsed().ok());  // policies.0.name not read yet
  REQUIRE(c->Get("policies.0.name", &p1).ok());
  CHECK(c->CheckAllUsed().ok());
}

TEST_CASE("config reports wrong types, unknown keys and syntax errors") {
  auto c = Config::Parse("port = \"abc\"\ntypo = 1\n", "test.toml");
  REQUIRE(c.ok());
  int64_t port = 0;
  auto s = c->Get("port", &port);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("port") != std::string::npos);
  auto unused = c->CheckAllUsed();
  CHECK_FALSE(unused.ok());
  CHECK(unused.message().find("typo") != std::string::npos);

  auto bad = Config::Parse("x = = 1", "bad.toml");
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.toml:1") != std::string::npos);
}

TEST_CASE("config overrides take TOML values or bare words") {
  auto c = Config::Parse("a = 1\n");
  REQUIRE(c.ok());
  REQUIRE(c->Override("a=2").ok());
  REQUIRE(c->Override("b.c=hello").ok());
  CHECK_FALSE(c->Override("novalue").ok());
  int64_t a = 0;
  std::string bc;
  REQUIRE(c->Get("a", &a).ok());
  REQUIRE(c->Get("b.c", &bc).ok());
  CHECK(a == 2);
  CHECK(bc == "hello");
}

TEST_CASE("kernel args parse key=value pairs") {
  auto a = tailcut::KernelArgs::Parse("ms=50  sigma=0.3 name=x");
  REQUIRE(a.ok());
  double ms = 0, sigma = 0;
  REQUIRE(a->GetDouble("ms", &ms).ok());
  REQUIRE(a->GetDouble("sigma", &sigma).ok());
  CHECK(ms == 50);
  CHECK(sigma == 0.3);
  CHECK(a->GetString("name") == "x");
  CHECK_FALSE(tailcut::KernelArgs::Parse("ms").ok());
  auto b = tailcut::KernelArgs::Parse("ms=abc");
  REQUIRE(b.ok());
  CHECK_FALSE(b->GetDouble("ms", &ms).ok());
}
