// `tailcut bench --rounds R`: the policies interleaved run by run, and the
// confidence intervals beside every p50, p99 and ratio (docs/benchmarks/live.md,
// "Confidence intervals").
#include <algorithm>
#include <cstdio>

#include "live.h"
#include "tailcut/common/stats.h"

namespace tailcut::sim {

void MergeRound(SimResult* into, const SimResult& round) {
  into->jobs += round.jobs;
  into->failed += round.failed;
  into->unfinished += round.unfinished;
  into->tasks += round.tasks;
  into->machine_s += round.machine_s;
  into->committed_s += round.committed_s;
  into->attempts += round.attempts;
  into->copies += round.copies;
  into->virtual_s += round.virtual_s;
  into->events += round.events;
  into->wall_s += round.wall_s;
  into->committed += round.committed;
  into->failed_attempts += round.failed_attempts;
  into->dropped += round.dropped;
  into->progress += round.progress;
  if (!round.last_failure.empty()) into->last_failure = round.last_failure;
  into->latencies.insert(into->latencies.end(), round.latencies.begin(), round.latencies.end());
  Summarise(into);
}

namespace {

std::vector<double> Finished(const SimResult& r) {
  std::vector<double> v;
  for (double x : r.latencies)
    if (x == x) v.push_back(x);  // NaN: unfinished
  return v;
}

std::string WithInterval(double x, Interval i, const char* fmt) {
  char buf[96];
  std::snprintf(buf, sizeof buf, fmt, x, i.lo, i.hi);
  return buf;
}

}  // namespace

void PrintIntervals(std::FILE* out, const std::vector<SimResult>& results, uint32_t rounds) {
  const BootstrapOptions bo;
  const SimResult* none = nullptr;
  for (const SimResult& r : results)
    if (r.policy == "none") none = &r;
  const std::vector<double> base = none ? Finished(*none) : std::vector<double>{};
  size_t fewest = SIZE_MAX;
  for (const SimResult& r : results) fewest = std::min(fewest, Finished(r).size());
  std::fprintf(out,
               "confidence: %.0f%% percentile bootstrap (%u resamples) over each policy's jobs, %u interleaved %s\n",
               100 * bo.level, bo.resamples, rounds, rounds == 1 ? "run" : "rounds");
  std::fprintf(out, "%-12s %-28s %-28s %-24s %-24s %s\n", "POLICY", "P50_S [CI]", "P99_S [CI]", "P50/none [CI]",
               "P99/none [CI]", "VERDICT");
  for (const SimResult& r : results) {
    const std::vector<double> v = Finished(r);
    std::string p50 = WithInterval(r.p50, BootstrapQuantile(v, 0.50, bo), "%.4f [%.4f, %.4f]");
    std::string p99 = WithInterval(r.p99, BootstrapQuantile(v, 0.99, bo), "%.4f [%.4f, %.4f]");
    std::string r50 = "-", r99 = "-", verdict = "-";
    if (none && &r != none && none->p50 > 0 && none->p99 > 0) {
      Interval i50 = BootstrapQuantileRatio(v, base, 0.50, bo), i99 = BootstrapQuantileRatio(v, base, 0.99, bo);
      r50 = WithInterval(r.p50 / none->p50, i50, "%.3f [%.3f, %.3f]");
      r99 = WithInterval(r.p99 / none->p99, i99, "%.3f [%.3f, %.3f]");
      // A claim only where the interval makes it.
      auto say = [](const char* q, Interval i) -> std::string {
        if (i.Below(1)) return std::string(q) + " better than none";
        if (i.Above(1)) return std::string(q) + " worse than none";
        return std::string(q) + " not told from none";
      };
      verdict = say("p50", i50) + "; " + say("p99", i99);
    }
    std::fprintf(out, "%-12s %-28s %-28s %-24s %-24s %s\n", r.policy.c_str(), p50.c_str(), p99.c_str(), r50.c_str(),
                 r99.c_str(), verdict.c_str());
  }
  if (fewest < 1000)
    std::fprintf(out,
                 "note: a p99 over %zu jobs rests on its %zu slowest; run --jobs 1000 (or more) for a p99 to mean "
                 "something\n",
                 fewest, fewest - (fewest * 99 + 99) / 100 + 1);
}

}  // namespace tailcut::sim
