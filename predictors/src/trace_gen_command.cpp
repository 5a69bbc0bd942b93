// tailcut trace-gen: write a synthetic attempt trace with known ground truth.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tailcut/predictors/commands.h"
#include "tailcut/predictors/trace.h"

namespace {

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: tailcut trace-gen [options] [-o OUT.csv]   (stdout without -o)\n"
               "  --executors N            executors, ids 1..N (16)\n"
               "  --tasks N                attempts (10000)\n"
               "  --job-size N             tasks per job (100)\n"
               "  --classes N              task classes c0..c{N-1}, base time x (1+i) (1)\n"
               "  --base-time S            seconds at input_size 1 (1.0)\n"
               "  --sigma X                lognormal noise (0.3)\n"
               "  --gamma-shape K          Gamma(K, 1/K) noise (mean 1) instead of lognormal (0 = off)\n"
               "  --speed-spread S         healthy executor speeds spread evenly over [1-S, 1+S] (0)\n"
               "  --skew X                 input_size in [1, X], log-uniform (1 = none)\n"
               "  --size-pareto A          input_size Pareto with shape A, truncated to [1, skew] (0 = off)\n"
               "  --size-exponent X        run time ~ input_size^X (1.0)\n"
               "  --straggler-prob P       fraction of straggler tasks (0)\n"
               "  --straggler-min X        straggler slowdown range (3)\n"
               "  --straggler-max X        (8)\n"
               "  --fail-slow-executor E   executor that turns slow (0 = none)\n"
               "  --fail-slow-onset S      from this time, seconds (0)\n"
               "  --fail-slow-end S        until this time (-1 = never)\n"
               "  --fail-slow-factor X     slowdown (3)\n"
               "  --label-cut X            straggler=1 when injected slowdown >= X (2)\n"
               "  --seed N                 (1)\n");
}

}  // namespace

int tailcut::TraceGenCommand(int argc, char** argv) {
  using namespace tailcut;
  TraceGenOptions o;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      Usage(stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "tailcut trace-gen: %s needs a value (or is unknown); see --help\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    char* end = nullptr;
    double d = std::strtod(v, &end);
    const bool num = end && *end == '\0' && end != v;
    if (a == "-o" || a == "--out") {
      out = v;
      continue;
    }
    if (!num) {
      std::fprintf(stderr, "tailcut trace-gen: %s: '%s' is not a number\n", a.c_str(), v);
      return 2;
    }
    auto u = [&](auto* field) {
      if (d < 0) {
        std::fprintf(stderr, "tailcut trace-gen: %s must be >= 0\n", a.c_str());
        std::exit(2);
      }
      *field = static_cast<std::remove_reference_t<decltype(*field)>>(d);
    };
    if (a == "--executors") u(&o.executors);
    else if (a == "--tasks") u(&o.tasks);
    else if (a == "--job-size") u(&o.job_size);
    else if (a == "--classes") u(&o.classes);
    else if (a == "--base-time") o.base_time = d;
    else if (a == "--sigma") o.sigma = d;
    else if (a == "--skew") o.skew = d;
    else if (a == "--size-pareto") u(&o.size_pareto);
    else if (a == "--gamma-shape") u(&o.gamma_shape);
    else if (a == "--speed-spread") o.speed_spread = d;
    else if (a == "--size-exponent") o.size_exponent = d;
    else if (a == "--straggler-prob") o.straggler_prob = d;
    else if (a == "--straggler-min") o.straggler_min = d;
    else if (a == "--straggler-max") o.straggler_max = d;
    else if (a == "--fail-slow-executor") u(&o.fail_slow_executor);
    else if (a == "--fail-slow-onset") o.fail_slow_onset = d;
    else if (a == "--fail-slow-end") o.fail_slow_end = d;
    else if (a == "--fail-slow-factor") o.fail_slow_factor = d;
    else if (a == "--label-cut") o.straggler_label_cut = d;
    else if (a == "--seed") u(&o.seed);
    else {
      std::fprintf(stderr, "tailcut trace-gen: unknown option %s; see --help\n", a.c_str());
      return 2;
    }
  }
  if (o.base_time <= 0 || o.sigma < 0 || o.skew < 1 || o.straggler_min > o.straggler_max ||
      !(o.speed_spread >= 0 && o.speed_spread < 1)) {
    std::fprintf(stderr,
                 "tailcut trace-gen: need base-time > 0, sigma >= 0, skew >= 1, straggler-min <= max, "
                 "0 <= speed-spread < 1\n");
    return 2;
  }
  auto rows = GenerateTrace(o);
  if (out.empty()) {
    std::fputs(FormatTraceCsv(rows).c_str(), stdout);
    return 0;
  }
  Status st = WriteTraceCsv(out, rows);
  if (!st.ok()) {
    std::fprintf(stderr, "tailcut trace-gen: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
