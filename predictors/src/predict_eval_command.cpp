// tailcut predict-eval (also built as tailcut-predict-eval): replays an attempt
// trace through the predictors; prints latency error, straggler
// precision/recall/F1 and fail-slow detection delays.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/predictors/commands.h"
#include "tailcut/predictors/eval.h"

namespace {

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: tailcut predict-eval TRACE.csv [options]\n"
               "  --json                  print the report as JSON\n"
               "  --predictor NAME        quantile (default) | regression\n"
               "  --config FILE.toml      read predictor options (keys under [predictor])\n"
               "  --set KEY=VALUE         override a predictor option, e.g. --set health.threshold=5\n"
               "  --assess-at X           assess at X x predicted median elapsed (default 1.0)\n"
               "  --threshold P           flag when p_straggler >= P (default 0.5)\n"
               "  --no-progress           assess without progress information\n"
               "  --help                  this text\n"
               "Trace format: docs/TRACE_FORMAT.md. Options: docs/PREDICTORS.md.\n");
}

bool ToDouble(const char* s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s, &end);
  return end && *end == '\0' && end != s;
}

}  // namespace

int tailcut::PredictEvalCommand(int argc, char** argv) {
  using namespace tailcut;
  std::string trace, predictor, config_path;
  std::vector<std::string> sets;
  bool json = false;
  EvalOptions opts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tailcut predict-eval: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      Usage(stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--predictor") {
      predictor = need("--predictor");
    } else if (a == "--config") {
      config_path = need("--config");
    } else if (a == "--set") {
      sets.push_back(need("--set"));
    } else if (a == "--assess-at") {
      if (!ToDouble(need("--assess-at"), &opts.assess_at) || opts.assess_at <= 0) {
        std::fprintf(stderr, "tailcut predict-eval: --assess-at must be a positive number\n");
        return 2;
      }
    } else if (a == "--threshold") {
      if (!ToDouble(need("--threshold"), &opts.flag_threshold)) {
        std::fprintf(stderr, "tailcut predict-eval: --threshold must be a number\n");
        return 2;
      }
    } else if (a == "--no-progress") {
      opts.progress = false;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "tailcut predict-eval: unknown option %s\n", a.c_str());
      Usage(stderr);
      return 2;
    } else if (trace.empty()) {
      trace = a;
    } else {
      std::fprintf(stderr, "tailcut predict-eval: more than one trace given\n");
      return 2;
    }
  }
  if (trace.empty()) {
    Usage(stderr);
    return 2;
  }
  Config cfg;
  if (!config_path.empty()) {
    auto c = Config::LoadFile(config_path);
    if (!c.ok()) {
      std::fprintf(stderr, "tailcut predict-eval: %s\n", c.status().ToString().c_str());
      return 2;
    }
    cfg = std::move(c.value());
  }
  for (const std::string& s : sets) {
    Status st = cfg.Override("predictor." + s);
    if (!st.ok()) {
      std::fprintf(stderr, "tailcut predict-eval: --set %s: %s\n", s.c_str(), st.ToString().c_str());
      return 2;
    }
  }
  if (!predictor.empty()) {
    Status st = cfg.Override("predictor.latency=\"" + predictor + "\"");
    if (!st.ok()) {
      std::fprintf(stderr, "tailcut predict-eval: %s\n", st.ToString().c_str());
      return 2;
    }
  }
  Status st = LoadPredictorOptions(cfg, "predictor", &opts.predictor);
  if (!st.ok()) {
    std::fprintf(stderr, "tailcut predict-eval: %s\n", st.ToString().c_str());
    return 2;
  }
  for (const std::string& k : cfg.Unused()) {
    if (k.rfind("predictor.", 0) == 0) {
      std::fprintf(stderr, "tailcut predict-eval: unknown predictor option '%s' (see docs/PREDICTORS.md)\n", k.c_str());
      return 2;
    }
  }
  auto rep = EvaluateTrace(trace, opts);
  if (!rep.ok()) {
    std::fprintf(stderr, "tailcut predict-eval: %s\n", rep.status().ToString().c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", EvalReportToJson(rep.value()).c_str());
  } else {
    std::printf("%s", FormatEvalReport(rep.value()).c_str());
  }
  return 0;
}
