#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "tailcut/predictors/eval.h"
#include "tailcut/predictors/trace.h"

using namespace tailcut;

TEST_CASE("Trace CSV: parse, optional columns, round trip", "[predictors][trace]") {
  auto rows = ParseTraceCsv(
      "# comment\n"
      "job,task,executor,start,end,task_class,input_size,straggler,fail_slow\n"
      "1,0,3,0.5,2.5,sort,100,0,\n"
      "\n"
      "1,1,4,1,9,sort,,1,1\r\n");
  REQUIRE(rows.ok());
  REQUIRE(rows.value().size() == 2);
  const TraceRow& a = rows.value()[0];
  CHECK(a.job == 1);
  CHECK(a.executor == 3);
  CHECK(a.duration() == Approx(2.0));
  CHECK(a.task_class == "sort");
  CHECK(a.input_size == 100);
  CHECK(a.straggler == 0);
  CHECK(a.fail_slow == -1);
  const TraceRow& b = rows.value()[1];
  CHECK(b.input_size == 0);
  CHECK(b.straggler == 1);
  CHECK(b.fail_slow == 1);
  AttemptRecord r = b.ToRecord(7);
  CHECK(r.attempt == 7);
  CHECK(r.Duration() == Approx(8));
  CHECK(r.outcome == AttemptOutcome::kCommitted);

  auto again = ParseTraceCsv(FormatTraceCsv(rows.value()));
  REQUIRE(again.ok());
  REQUIRE(again.value().size() == 2);
  CHECK(again.value()[1].end == Approx(9));
  CHECK(again.value()[0].fail_slow == -1);

  // Columns may come in any order; the labels are optional.
  auto minimal = ParseTraceCsv("task_class,end,start,executor,task,job\nx,2,1,1,0,1\n");
  REQUIRE(minimal.ok());
  CHECK(minimal.value()[0].straggler == -1);
  CHECK(minimal.value()[0].duration() == Approx(1));
}

TEST_CASE("Trace CSV: errors carry the line number", "[predictors][trace]") {
  const std::string h = "job,task,executor,start,end,task_class,input_size,straggler,fail_slow\n";
  auto e1 = ParseTraceCsv(h + "1,0,1,0,1,a,1,0,0\n1,1,1,5,4,a,1,0,0\n", "t.csv");
  REQUIRE_FALSE(e1.ok());
  CHECK(e1.status().message() == "t.csv:3: end < start");
  auto e2 = ParseTraceCsv(h + "1,0,1,0,x,a,1,0,0\n", "t.csv");
  REQUIRE_FALSE(e2.ok());
  CHECK(e2.status().message().rfind("t.csv:2: bad end", 0) == 0);
  auto e3 = ParseTraceCsv(h + "1,0,1,0,1,a,1,2,0\n", "t.csv");
  REQUIRE_FALSE(e3.ok());
  CHECK(e3.status().message().find("straggler") != std::string::npos);
  auto e4 = ParseTraceCsv(h + "1,0,1,0,1,a\n", "t.csv");
  REQUIRE_FALSE(e4.ok());
  CHECK(e4.status().message().find("t.csv:2: expected 9 fields") == 0);
  auto e5 = ParseTraceCsv("job,task,start,end\n", "t.csv");
  REQUIRE_FALSE(e5.ok());
  CHECK(e5.status().message().find("t.csv:1: header lacks required column 'executor'") == 0);
  auto e6 = ParseTraceCsv(h + "1,0,0,0,1,a,1,0,0\n", "t.csv");
  REQUIRE_FALSE(e6.ok());
  CHECK(e6.status().message().find("executor") != std::string::npos);
  CHECK_FALSE(ParseTraceCsv("", "t.csv").ok());
  CHECK(ReadTraceCsv("/nonexistent/trace.csv").status().code() == Status::Code::kIoError);
}

TEST_CASE("GenerateTrace: deterministic, ground truth consistent", "[predictors][trace]") {
  TraceGenOptions o;
  o.executors = 4;
  o.tasks = 2000;
  o.straggler_prob = 0.1;
  o.fail_slow_executor = 2;
  o.fail_slow_onset = 100;
  o.fail_slow_end = 300;
  o.skew = 10;
  o.seed = 5;
  auto a = GenerateTrace(o), b = GenerateTrace(o);
  REQUIRE(a.size() == 2000);
  CHECK(FormatTraceCsv(a) == FormatTraceCsv(b));
  int stragglers = 0, slow = 0;
  double busy_until[5] = {0, 0, 0, 0, 0};
  for (const TraceRow& r : a) {
    CHECK(r.end > r.start);
    CHECK(r.input_size >= 1.0);
    CHECK(r.input_size <= 10.0);
    CHECK(r.start >= busy_until[r.executor] - 1e-9);  // one at a time per executor
    busy_until[r.executor] = r.end;
    const bool in = r.executor == 2 && r.start >= 100 && r.start < 300;
    CHECK(r.fail_slow == (in ? 1 : 0));
    if (in) CHECK(r.straggler == 1);  // 3x fail-slow >= label cut 2
    stragglers += r.straggler;
    slow += r.fail_slow;
  }
  CHECK(slow > 10);
  CHECK(stragglers > 150);
  CHECK(stragglers < 300);
}

TEST_CASE("GenerateTrace: healthy speed spread, gamma run times, Pareto input sizes", "[predictors][trace]") {
  TraceGenOptions o;
  o.executors = 5;
  o.tasks = 20000;
  o.speed_spread = 0.2;
  o.gamma_shape = 4;
  o.skew = 100;
  o.size_pareto = 1.2;
  o.seed = 9;
  auto rows = GenerateTrace(o);
  REQUIRE(rows.size() == 20000);
  CHECK(FormatTraceCsv(rows) == FormatTraceCsv(GenerateTrace(o)));
  // Per executor, run time / input_size is speed^-1 x Gamma(4, 1/4).
  std::vector<double> sum(6, 0), sum2(6, 0), n(6, 0);
  size_t small = 0;
  for (const TraceRow& r : rows) {
    CHECK(r.input_size >= 1.0);
    CHECK(r.input_size <= 100.0);
    small += r.input_size < 2.0;
    const double x = r.duration() / r.input_size;
    sum[r.executor] += x;
    sum2[r.executor] += x * x;
    n[r.executor] += 1;
  }
  // Truncated Pareto(1.2) on [1, 100]: P(size < 2) = (1 - 2^-1.2) / (1 - 100^-1.2) = 0.568.
  CHECK(double(small) / rows.size() == Approx(0.568).margin(0.02));
  std::vector<double> speed;
  for (int e = 1; e <= 5; ++e) {
    const double mean = sum[e] / n[e];
    const double cv = std::sqrt(sum2[e] / n[e] - mean * mean) / mean;
    CHECK(cv == Approx(0.5).margin(0.05));  // gamma shape 4: CV 1/2
    speed.push_back(1 / mean);
  }
  // Evenly spaced over [0.8, 1.2], in some order.
  std::sort(speed.begin(), speed.end());
  for (int i = 0; i < 5; ++i) CHECK(speed[i] == Approx(0.8 + 0.1 * i).epsilon(0.04));
}

TEST_CASE("EvaluateTrace on the checked-in small trace (file path + JSON)", "[predictors][eval]") {
  EvalOptions o;
  o.predictor.latency = "regression";
  auto rep = EvaluateTrace(std::string(TAILCUT_TEST_DATA_DIR) + "/predictors_small.csv", o);
  REQUIRE(rep.ok());
  const EvalReport& r = rep.value();
  CHECK(r.attempts == 2000);
  CHECK(r.predictor == "regression");
  CHECK(r.predicted > 1900);
  CHECK(r.mape < 0.5);
  CHECK(r.straggler_labelled == 2000);
  CHECK(r.straggler.F1() > 0.85);
  REQUIRE(r.episodes.size() == 1);
  CHECK(r.episodes[0].executor == 3);
  CHECK(r.episodes[0].detected);
  CHECK(r.episodes[0].delay_tasks <= 10);
  CHECK(r.false_alarms == 0);
  const std::string js = EvalReportToJson(r);
  CHECK(js.front() == '{');
  CHECK(js.back() == '}');
  CHECK(js.find("\"predictor\":\"regression\"") != std::string::npos);
  CHECK(js.find("\"f1\":") != std::string::npos);
  CHECK(js.find("\"delay_tasks\":") != std::string::npos);
  const std::string txt = FormatEvalReport(r);
  CHECK(txt.find("flagged after") != std::string::npos);

  auto bad = EvaluateTrace("/nonexistent.csv", o);
  CHECK_FALSE(bad.ok());
}

TEST_CASE("EvaluateRows: no labels, no fail-slow column", "[predictors][eval]") {
  TraceGenOptions g;
  g.tasks = 500;
  auto rows = GenerateTrace(g);
  for (auto& r : rows) r.straggler = r.fail_slow = -1;
  EvalReport r = EvaluateRows(rows, EvalOptions{});
  CHECK(r.straggler_labelled == 0);
  CHECK_FALSE(r.fail_slow_labelled);
  CHECK(r.episodes.empty());
  CHECK(r.mae_s > 0);
}

TEST_CASE("EvaluateRows: fail-slow episode that ends and recovery is not a false alarm", "[predictors][eval]") {
  TraceGenOptions g;
  g.executors = 8;
  g.tasks = 20000;
  g.fail_slow_executor = 2;
  g.fail_slow_onset = 500;
  g.fail_slow_end = 1500;
  g.seed = 17;
  auto rows = GenerateTrace(g);
  EvalReport r = EvaluateRows(rows, EvalOptions{});
  REQUIRE(r.episodes.size() == 1);
  CHECK(r.episodes[0].detected);
  CHECK(r.episodes[0].end >= 1500);
  CHECK(r.episodes[0].delay_tasks <= 10);
  CHECK(r.false_alarms == 0);
  CHECK(r.fail_slow_alarms == 1);

  // The suite itself goes FAIL_SLOW -> RECOVERED -> HEALTHY along the way.
  PredictorSuite s;
  std::vector<NodeHealth> seen;
  for (size_t i = 0; i < rows.size(); ++i) {  // start order == end order per executor
    s.Observe(rows[i].ToRecord(i + 1));
    for (auto& [e, st] : s.HealthTransitions())
      if (e == 2) seen.push_back(st.state);
  }
  REQUIRE(seen.size() >= 3);
  CHECK(seen[seen.size() - 3] == NodeHealth::kFailSlow);
  CHECK(seen[seen.size() - 2] == NodeHealth::kRecovered);
  CHECK(seen.back() == NodeHealth::kHealthy);
}

TEST_CASE("EvaluateRows: assessment without progress is a weaker signal", "[predictors][eval]") {
  TraceGenOptions g;
  g.tasks = 5000;
  g.straggler_prob = 0.05;
  g.seed = 23;
  auto rows = GenerateTrace(g);
  EvalOptions o;
  EvalReport with = EvaluateRows(rows, o);
  o.progress = false;
  o.assess_at = 2.0;
  EvalReport without = EvaluateRows(rows, o);
  CHECK(with.straggler.F1() > 0.9);
  CHECK(without.straggler.F1() < with.straggler.F1());
  CHECK(with.straggler_monitor.tp == without.straggler_monitor.tp);  // monitor mode ignores EvalOptions.progress
}
