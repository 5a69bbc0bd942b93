#include "tailcut/cli/tool_commands.h"

#include <cstdio>
#include <limits>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/predictors/eval.h"
#include "tailcut/predictors/trace.h"

namespace tailcut::cli {
namespace {

int RunPredictEval(const std::string& name, const Args& a) {
  auto fail = [&](const std::string& message, int rc) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), message.c_str());
    return rc;
  };
  EvalOptions opts;
  opts.assess_at = a.Double("--assess-at", 1.0, 1e-9, 1e9);
  opts.flag_threshold = a.Double("--threshold", 0.5, -1e9, 1e9);
  opts.progress = !a.Has("--no-progress");
  if (!a.error().empty()) return fail(a.error(), kExitUsage);
  Config cfg;
  if (a.Has("--config")) {
    auto c = Config::LoadFile(a.Get("--config"));
    if (!c.ok()) return fail(c.status().ToString(), kExitUsage);
    cfg = std::move(c.value());
  }
  for (const std::string& s : a.GetAll("--set"))
    if (Status st = cfg.Override("predictor." + s); !st.ok()) return fail("--set " + s + ": " + st.ToString(), 2);
  if (a.Has("--predictor"))
    if (Status st = cfg.Override("predictor.latency=" + TomlQuote(a.Get("--predictor"))); !st.ok())
      return fail(st.ToString(), kExitUsage);
  if (Status st = LoadPredictorOptions(cfg, "predictor", &opts.predictor); !st.ok())
    return fail(st.ToString(), kExitUsage);
  for (const std::string& k : cfg.Unused())
    if (k.rfind("predictor.", 0) == 0)
      return fail("unknown predictor option '" + k + "' (see docs/PREDICTORS.md)", kExitUsage);
  auto rep = EvaluateTrace(a.positional()[0], opts);
  if (!rep.ok()) return fail(rep.status().ToString(), kExitFailed);
  if (a.Has("--json"))
    std::printf("%s\n", EvalReportToJson(rep.value()).c_str());
  else
    std::printf("%s", FormatEvalReport(rep.value()).c_str());
  return kExitOk;
}

// trace-gen's numeric flags: flag, help, and where the value goes.
struct TraceGenNumber {
  const char* flag;
  const char* help;
  double min;
  std::function<void(TraceGenOptions*, double)> set;
};

template <typename T>
std::function<void(TraceGenOptions*, double)> Into(T TraceGenOptions::*field) {
  return [field](TraceGenOptions* o, double v) { o->*field = static_cast<T>(v); };
}

const std::vector<TraceGenNumber>& TraceGenNumbers() {
  constexpr double kAny = -std::numeric_limits<double>::max();
  static const std::vector<TraceGenNumber> numbers = {
      {"--executors", "executors, ids 1..N (16)", 0, Into(&TraceGenOptions::executors)},
      {"--tasks", "attempts (10000)", 0, Into(&TraceGenOptions::tasks)},
      {"--job-size", "tasks per job (100)", 0, Into(&TraceGenOptions::job_size)},
      {"--classes", "task classes c0..c{N-1}, base time x (1+i) (1)", 0, Into(&TraceGenOptions::classes)},
      {"--base-time", "seconds at input_size 1 (1.0)", kAny, Into(&TraceGenOptions::base_time)},
      {"--sigma", "lognormal noise (0.3)", kAny, Into(&TraceGenOptions::sigma)},
      {"--gamma-shape", "Gamma(K, 1/K) noise (mean 1) instead of lognormal (0 = off)", 0,
       Into(&TraceGenOptions::gamma_shape)},
      {"--speed-spread", "healthy executor speeds spread evenly over [1-S, 1+S] (0)", kAny,
       Into(&TraceGenOptions::speed_spread)},
      {"--skew", "input_size in [1, X], log-uniform (1 = none)", kAny, Into(&TraceGenOptions::skew)},
      {"--size-pareto", "input_size Pareto with shape A, truncated to [1, skew] (0 = off)", 0,
       Into(&TraceGenOptions::size_pareto)},
      {"--size-exponent", "run time ~ input_size^X (1.0)", kAny, Into(&TraceGenOptions::size_exponent)},
      {"--straggler-prob", "fraction of straggler tasks (0)", kAny, Into(&TraceGenOptions::straggler_prob)},
      {"--straggler-min", "straggler slowdown range, from (3)", kAny, Into(&TraceGenOptions::straggler_min)},
      {"--straggler-max", "... to (8)", kAny, Into(&TraceGenOptions::straggler_max)},
      {"--fail-slow-executor", "executor that turns slow (0 = none)", 0, Into(&TraceGenOptions::fail_slow_executor)},
      {"--fail-slow-onset", "from this time, seconds (0)", kAny, Into(&TraceGenOptions::fail_slow_onset)},
      {"--fail-slow-end", "until this time (-1 = never)", kAny, Into(&TraceGenOptions::fail_slow_end)},
      {"--fail-slow-factor", "slowdown (3)", kAny, Into(&TraceGenOptions::fail_slow_factor)},
      {"--label-cut", "straggler=1 when injected slowdown >= X (2)", kAny, Into(&TraceGenOptions::straggler_label_cut)},
      {"--seed", "(1)", 0, Into(&TraceGenOptions::seed)},
  };
  return numbers;
}

int RunTraceGen(const std::string& name, const Args& a) {
  TraceGenOptions o;
  for (const TraceGenNumber& n : TraceGenNumbers())
    if (a.Has(n.flag)) n.set(&o, a.Double(n.flag, 0, n.min, std::numeric_limits<double>::max()));
  if (!a.error().empty()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), a.error().c_str());
    return kExitUsage;
  }
  if (o.base_time <= 0 || o.sigma < 0 || o.skew < 1 || o.straggler_min > o.straggler_max ||
      !(o.speed_spread >= 0 && o.speed_spread < 1)) {
    std::fprintf(stderr,
                 "%s: need --base-time > 0, --sigma >= 0, --skew >= 1, --straggler-min <= --straggler-max, "
                 "0 <= --speed-spread < 1\n",
                 name.c_str());
    return kExitUsage;
  }
  auto rows = GenerateTrace(o);
  const std::string out = a.Get("-o");
  if (out.empty()) {
    std::fputs(FormatTraceCsv(rows).c_str(), stdout);
    return kExitOk;
  }
  if (Status st = WriteTraceCsv(out, rows); !st.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), st.ToString().c_str());
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

Command PredictEvalCommand(const std::string& name) {
  Command c;
  c.name = name;
  c.summary =
      "replay an attempt trace through the predictors: latency error, straggler precision/recall/F1, "
      "fail-slow delay";
  c.description =
      "Replays an attempt trace (docs/TRACE_FORMAT.md) through the predictors and prints their latency error, "
      "straggler precision/recall/F1 and fail-slow detection delays. Options: docs/PREDICTORS.md.";
  c.flags = {
      {"--json", "", "print the report as JSON"},
      {"--predictor", "NAME", "quantile (default) | regression"},
      {"--config", "FILE.toml", "read predictor options (keys under [predictor])"},
      {"--set", "KEY=VALUE", "override a predictor option, e.g. --set health.threshold=5; repeatable", "", true},
      {"--assess-at", "X", "assess at X x predicted median elapsed (default 1.0)"},
      {"--threshold", "P", "flag when p_straggler >= P (default 0.5)"},
      {"--no-progress", "", "assess without progress information"},
  };
  c.positionals = {{"TRACE.csv", "the attempt trace"}};
  c.run = [name](const Args& a) { return RunPredictEval(name, a); };
  return c;
}

Command TraceGenCommand(const std::string& name) {
  Command c;
  c.name = name;
  c.summary = "write a synthetic attempt trace with known ground truth";
  c.description =
      "Writes a synthetic attempt trace (docs/TRACE_FORMAT.md) with known ground truth (straggler and fail-slow "
      "labels) for predict-eval and whatif; to standard output without -o. Defaults in parentheses.";
  c.flags = {{"-o,--out", "OUT.csv", "write the trace here (default: standard output)"}};
  for (const TraceGenNumber& n : TraceGenNumbers()) c.flags.push_back({n.flag, "X", n.help});
  c.run = [name](const Args& a) { return RunTraceGen(name, a); };
  return c;
}

}  // namespace tailcut::cli
