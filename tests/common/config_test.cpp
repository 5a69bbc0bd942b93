#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

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

TEST_CASE("config: nan and inf are errors that name the key") {
  auto c = Config::Parse("[core]\nredundancy_budget = nan\npolicy_interval_s = inf\n");
  REQUIRE(c.ok());
  double x = 1;
  auto s = c->Get("core.redundancy_budget", &x);
  CHECK_FALSE(s.ok());
  CHECK(s.message() == "config key 'core.redundancy_budget' must be a finite number");
  CHECK_FALSE(c->Get("core.policy_interval_s", &x).ok());
  CHECK(x == 1);  // untouched
}

TEST_CASE("config: TableReader keeps defaults, stops at the first error, checks name the table") {
  auto c = Config::Parse("[t]\na = 2\nb = \"text\"\nc = 3\n");
  REQUIRE(c.ok());
  int64_t a = 0, missing = 9, c_val = 0;
  double b = 0;
  tailcut::TableReader ok(*c, "t");
  ok.Get("a", &a).Get("missing", &missing).Check(a == 2, "a must be 2");
  CHECK(ok.status().ok());
  CHECK(a == 2);
  CHECK(missing == 9);
  tailcut::TableReader bad(*c, "t");
  bad.Get("b", &b).Get("c", &c_val);
  CHECK(bad.status().message() == "config key 't.b' must be a number");
  CHECK(c_val == 0);  // not read after the first error
  tailcut::TableReader check(*c, "t");
  check.Get("c", &c_val).Check(c_val < 3, "c must be < 3").Check(false, "never reported");
  CHECK(check.status().message() == "t.c must be < 3");
  tailcut::TableReader top(*c, "");
  CHECK(top.Key("x") == "x");
}

TEST_CASE("status: reading the value of an error aborts with its message") {
  // A death test: the child reads the value, the parent checks it aborted.
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::freopen("/dev/null", "w", stderr);
    tailcut::StatusOr<int> bad = tailcut::Status::NotFound("no such thing");
    int v = *bad;
    std::_Exit(v == 0 ? 3 : 4);  // not reached
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGABRT);
}

TEST_CASE("kernel args: nan, inf, overflow and out-of-range numbers are errors naming the argument") {
  auto a = tailcut::KernelArgs::Parse("ms=inf nan=nan big=1e999 neg=-5 huge=99999999999999999999 ok=7");
  REQUIRE(a.ok());
  double d = 1;
  for (const char* key : {"ms", "nan", "big"}) {
    auto s = a->GetDouble(key, &d);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find(std::string("'") + key + "' must be a finite number") != std::string::npos);
  }
  CHECK(d == 1);  // untouched
  auto neg = a->GetDouble("neg", &d, 0, 10);
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.message() == "kernel argument 'neg' must be in [0, 10], got -5");
  REQUIRE(a->GetDouble("ok", &d, 0, 10).ok());
  CHECK(d == 7);
  REQUIRE(a->GetDouble("absent", &d, 0, 1).ok());  // absent: the default stays, unchecked
  CHECK(d == 7);
  int64_t i = 0;
  auto huge = a->GetInt("huge", &i);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.message().find("'huge' must be an integer") != std::string::npos);
}

TEST_CASE("config: integers out of range for a uint name the key") {
  auto c = Config::Parse("[core]\nmax_attempts = 4294967296\nmin_copies = -1\n");
  REQUIRE(c.ok());
  uint32_t x = 3;
  auto s = c->Get("core.max_attempts", &x);
  CHECK(s.message() == "config key 'core.max_attempts' must be a non-negative integer");
  CHECK_FALSE(c->Get("core.min_copies", &x).ok());
  CHECK(x == 3);
  // Beyond int64, TOML itself refuses the document, with the line.
  auto big = Config::Parse("[core]\nmax_attempts = 99999999999999999999\n", "big.toml");
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().message().find("big.toml:2") != std::string::npos);
}

TEST_CASE("config: TomlQuote writes a string that parses back to itself") {
  for (std::string text : {std::string("plain"), std::string("a \"quoted\" \\ path"), std::string("line\nbreak\ttab"),
                           std::string("nul\0byte", 8), std::string("")}) {
    auto cfg = tailcut::Config::Parse("k = " + tailcut::TomlQuote(text));
    REQUIRE(cfg.ok());
    std::string back;
    REQUIRE(cfg->Get("k", &back).ok());
    CHECK(back == text);
  }
}
