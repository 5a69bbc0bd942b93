#include "tailcut/sim/matrix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tailcut/common/random.h"
#include "tailcut/sim/online_reference.h"

namespace tailcut::sim {
namespace {

// One shape's parameters; Toml() writes them as a scenario.
struct Params {
  double median_s = 0.01;
  enum class Dist { kLognormal, kPareto, kBimodal } dist = Dist::kLognormal;
  double sigma = 0.3;                  // lognormal, bimodal
  double alpha = 2.5;                  // pareto
  double high_p = 0, high_factor = 1;  // bimodal
  uint32_t executors = 4, slots = 1;
  double straggler_p = 0, straggler_factor = 10;
  uint32_t fail_slow = 0;  // executors 5x slower from the start
  double load = 0.5;       // Poisson offered load of the slots; 0 = closed, one job at a time
  bool two_owners = false;
  CompletionKind rule = CompletionKind::kAll;
  uint32_t tasks = 8;  // per job (k of coded and quorum jobs)
  uint32_t jobs = 250;
};

constexpr double kFailSlowFactor = 5;

template <class T>
T Pick(Rng& rng, std::initializer_list<T> v) {
  return *(v.begin() + rng.Below(v.size()));
}

// Tasks a job launches: coded jobs carry two parity tasks, quorum jobs
// over-select by 30% (docs/POLICIES.md, "Redundancy on coded and quorum jobs").
uint32_t Launched(const Params& p) {
  if (p.rule == CompletionKind::kKOfN) return p.tasks + 2;
  if (p.rule == CompletionKind::kQuorum) return static_cast<uint32_t>(std::ceil(p.tasks * 1.3));
  return p.tasks;
}

std::string TaskTime(const Params& p, bool healthy) {
  char b[256];
  const double sp = healthy ? 0 : p.straggler_p;
  switch (p.dist) {
    case Params::Dist::kLognormal:
      std::snprintf(b, sizeof b, R"({ dist = "lognormal", median = %.6g, sigma = %.3g)", p.median_s, p.sigma);
      break;
    case Params::Dist::kPareto:  // scale so that the median is median_s
      std::snprintf(b, sizeof b, R"({ dist = "pareto", scale = %.6g, alpha = %.3g)",
                    p.median_s / std::pow(2.0, 1.0 / p.alpha), p.alpha);
      break;
    case Params::Dist::kBimodal:
      std::snprintf(b, sizeof b,
                    R"({ dist = "bimodal", median = %.6g, sigma = %.3g, high_p = %.3g, high_factor = %.3g)", p.median_s,
                    p.sigma, p.high_p, p.high_factor);
      break;
  }
  std::string s = b;
  if (sp > 0) {
    std::snprintf(b, sizeof b, ", straggler_p = %.3g, straggler_factor = %.3g", sp, p.straggler_factor);
    s += b;
  }
  return s + " }";
}

// Mean run time of one task, stragglers included (the load's unit).
double MeanTask(const Params& p) {
  Distribution d;
  switch (p.dist) {
    case Params::Dist::kLognormal: d.kind = Distribution::Kind::kLognormal; break;
    case Params::Dist::kPareto: d.kind = Distribution::Kind::kPareto; break;
    case Params::Dist::kBimodal: d.kind = Distribution::Kind::kBimodal; break;
  }
  d.median = p.median_s;
  d.sigma = p.sigma;
  d.alpha = p.alpha;
  d.scale = p.median_s / std::pow(2.0, 1.0 / p.alpha);
  d.high_p = p.high_p;
  d.high_factor = p.high_factor;
  d.straggler_p = p.straggler_p;
  d.straggler_factor = p.straggler_factor;
  return d.Mean();
}

std::string Toml(const Params& p, const std::string& name, bool healthy) {
  std::ostringstream t;
  t << "name = \"" << name << (healthy ? "_healthy" : "") << "\"\nseed = 1\n\n";
  t << "[cluster]\nexecutors = " << p.executors << "\nslots = " << p.slots
    << "\nnetwork = { dist = \"constant\", value = 0.00015 }\n";
  for (uint32_t i = 0; !healthy && i < p.fail_slow; ++i)
    t << "\n[[cluster.fail_slow]]\nexecutor = " << (1 + 3 * i) % p.executors
      << "\nat_s = 0\nfactor = " << kFailSlowFactor << "\n";
  // Offered load against the healthy fleet's capacity; with two owners each
  // brings half of it (the other owner's jobs have twice the tasks).
  const double capacity = static_cast<double>(p.executors) * p.slots;
  const double work = Launched(p) * MeanTask(p);
  const double share = p.two_owners ? 0.5 : 1.0;
  t << "\n[workload]\n";
  if (p.two_owners) t << "owner = \"a\"\n";
  if (p.load > 0)
    t << "arrival = \"poisson\"\nrate = " << p.load * share * capacity / work << "\n";
  else
    t << "arrival = \"closed\"\noutstanding = 1\n";
  t << "jobs = " << p.jobs << "\n\n[[workload.class]]\nname = \"main\"\ntasks = " << Launched(p)
    << "\ntask_time = " << TaskTime(p, healthy) << "\n";
  if (p.rule == CompletionKind::kKOfN) t << "rule = \"k_of_n\"\nk = " << p.tasks << "\n";
  if (p.rule == CompletionKind::kQuorum) t << "rule = \"quorum\"\nk = " << p.tasks << "\n";
  if (p.two_owners) {
    const double load = p.load > 0 ? p.load : 0.5;
    t << "\n[[workload.class]]\nname = \"other\"\nweight = 0\ntasks = " << 2 * Launched(p)
      << "\ntask_time = " << TaskTime(p, healthy) << "\n";
    if (p.rule != CompletionKind::kAll)
      t << "rule = \"" << (p.rule == CompletionKind::kKOfN ? "k_of_n" : "quorum") << "\"\nk = " << 2 * p.tasks << "\n";
    t << "\n[[workload.stream]]\nowner = \"b\"\nclass = \"other\"\narrival = \"poisson\"\nrate = "
      << load * share * capacity / (2 * work) << "\njobs = " << p.jobs / 2 << "\n";
  }
  return t.str();
}

std::string Summary(const Params& p) {
  std::ostringstream s;
  s.precision(3);
  s << (p.median_s < 1 ? p.median_s * 1000 : p.median_s) << (p.median_s < 1 ? " ms " : " s ");
  switch (p.dist) {
    case Params::Dist::kLognormal: s << "lognormal σ" << p.sigma; break;
    case Params::Dist::kPareto: s << "Pareto α" << p.alpha; break;
    case Params::Dist::kBimodal: s << "bimodal " << p.high_p * 100 << "% x" << p.high_factor; break;
  }
  s << ", " << p.executors << "x" << p.slots << ", " << Launched(p) << " tasks";
  if (p.rule == CompletionKind::kKOfN) s << " (k " << p.tasks << ")";
  if (p.rule == CompletionKind::kQuorum) s << " (quorum " << p.tasks << ")";
  if (p.straggler_p > 0) s << ", stragglers " << p.straggler_p * 100 << "% x" << p.straggler_factor;
  if (p.fail_slow > 0) s << ", " << p.fail_slow << " fail-slow";
  if (p.load > 0)
    s << ", load " << p.load * 100 << "%";
  else
    s << ", closed";
  if (p.two_owners) s << ", 2 owners";
  return s.str();
}

Params Generate(uint32_t i) {
  Params p;
  if (i >= 60) {
    // The shapes issue 31 names outside the shipped family: 2 ms and two
    // slots, 5 ms, 20 ms and 500 ms, 5% stragglers 10x, one job at a time.
    p.median_s = std::initializer_list<double>{0.002, 0.005, 0.02, 0.5}.begin()[i - 60];
    p.executors = 4;
    p.slots = 2;
    p.straggler_p = 0.05;
    p.load = 0;
    p.tasks = 16;
    return p;
  }
  Rng rng(Mix(0x6d6174726978ULL + i));
  // Strata: every (scale, distribution, slots) combination once.
  p.median_s = std::initializer_list<double>{0.001, 0.01, 0.1, 1, 10}.begin()[i % 5];
  p.dist = static_cast<Params::Dist>((i / 5) % 3);
  p.slots = std::initializer_list<uint32_t>{1, 2, 4, 8}.begin()[(i / 15) % 4];
  p.sigma = p.dist == Params::Dist::kBimodal ? 0.3 : Pick(rng, {0.2, 0.5, 1.0});
  p.alpha = Pick(rng, {1.8, 2.5, 4.0});
  p.high_p = Pick(rng, {0.1, 0.25});
  p.high_factor = Pick(rng, {4.0, 10.0});
  p.straggler_p = Pick(rng, {0.0, 0.02, 0.05, 0.1, 0.2});
  p.straggler_factor = Pick(rng, {5.0, 10.0});
  const double fail_share = Pick(rng, {0.0, 0.0, 0.05, 0.1});
  p.executors = fail_share > 0 ? Pick<uint32_t>(rng, {10, 20}) : Pick<uint32_t>(rng, {4, 6, 8});
  p.fail_slow = static_cast<uint32_t>(std::max(1.0, std::round(fail_share * p.executors))) * (fail_share > 0);
  p.load = Pick(rng, {0.3, 0.5, 0.7, 0.85, 1.0, 0.0});
  p.tasks = Pick<uint32_t>(rng, {1, 4, 8, 16, 32});
  p.two_owners = i % 4 == 3;
  if (i % 8 == 5 || i % 8 == 6) {
    p.rule = i % 8 == 5 ? CompletionKind::kKOfN : CompletionKind::kQuorum;
    p.tasks = std::max<uint32_t>(p.tasks, 4);
  }
  return p;
}

}  // namespace

const std::vector<MatrixShape>& MatrixShapes() {
  static const std::vector<MatrixShape> shapes = [] {
    std::vector<MatrixShape> v;
    for (uint32_t i = 0; i < 64; ++i) {
      const Params p = Generate(i);
      char name[8];
      std::snprintf(name, sizeof name, "m%02u", i);
      v.push_back({name, Summary(p), Toml(p, name, false), Toml(p, name, true), p.straggler_p > 0 || p.fail_slow > 0,
                   p.rule == CompletionKind::kAll});
    }
    return v;
  }();
  return shapes;
}

StatusOr<MatrixRow> RunMatrixShape(const MatrixShape& shape, const std::string& entry, bool references) {
  auto load = [](const std::string& toml, const std::string& origin) -> StatusOr<Scenario> {
    auto cfg = Config::Parse(toml, origin);
    if (!cfg.ok()) return cfg.status();
    return ParseScenario(std::move(cfg).value(), ".");
  };
  auto sc = load(shape.toml, shape.name);
  if (!sc.ok()) return sc.status();
  MatrixRow row;
  row.shape = &shape;
  auto none = RunPolicy(*sc, "none", sc->seed);
  if (!none.ok()) return none.status();
  auto pol = RunPolicy(*sc, entry, sc->seed);
  if (!pol.ok()) return pol.status();
  row.none = std::move(none).value();
  row.policy = std::move(pol).value();
  row.p50_holds = row.policy.p50 <= kMatrixP50Slack * row.none.p50;
  row.p99_holds = row.policy.p99 <= row.none.p99;
  row.online_holds = row.healthy_holds = true;
  if (!references) return row;
  auto online = OnlineReference(*sc, sc->seed, row.none);
  if (!online.ok()) return online.status();
  row.online = std::move(online->result);
  row.online_ratio = online->ratio;
  auto healthy = load(shape.healthy, shape.name + "_healthy");
  if (!healthy.ok()) return healthy.status();
  auto h = RunPolicy(*healthy, "none", healthy->seed);
  if (!h.ok()) return h.status();
  row.healthy_p99 = h->p99;
  if (shape.faulty) {
    row.online_holds = row.policy.p99 <= kMatrixOnlineSlack * row.online.p99;
    row.healthy_holds = row.policy.p99 <= kMatrixHealthySlack * row.healthy_p99;
  }
  return row;
}

std::string MatrixTable(const std::vector<MatrixRow>& rows, const std::string& entry) {
  std::ostringstream t;
  char b[768];
  t << "| shape | what | none p50 / p99 s | " << entry
    << " p50 / p99 s | online p99 s (R) | healthy p99 s | p50 / none | "
    << "p99 / none | p99 / online | p99 / healthy | fails |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  size_t p50 = 0, p99 = 0, onl = 0, hlt = 0, faulty = 0;
  for (const MatrixRow& r : rows) {
    std::string fails;
    auto mark = [&](bool holds, const char* what) {
      if (!holds) fails += fails.empty() ? what : std::string(", ") + what;
    };
    mark(r.p50_holds, "p50");
    mark(r.p99_holds, "p99");
    mark(r.online_holds, "online");
    mark(r.healthy_holds, "healthy");
    p50 += r.p50_holds;
    p99 += r.p99_holds;
    faulty += r.shape->faulty;
    onl += r.shape->faulty && r.online_holds;
    hlt += r.shape->faulty && r.healthy_holds;
    // The reference ratios are judged on faulty shapes only.
    char onl_x[16] = "-", hlt_x[16] = "-";
    if (r.shape->faulty) {
      std::snprintf(onl_x, sizeof onl_x, "%.3f", r.policy.p99 / r.online.p99);
      std::snprintf(hlt_x, sizeof hlt_x, "%.3f", r.policy.p99 / r.healthy_p99);
    }
    std::snprintf(b, sizeof b,
                  "| %s | %s | %.4g / %.4g | %.4g / %.4g | %.4g (%.3g) | %.4g | %.3f | %.3f | %s | %s | %s |\n",
                  r.shape->name.c_str(), r.shape->summary.c_str(), r.none.p50, r.none.p99, r.policy.p50, r.policy.p99,
                  r.online.p99, r.online_ratio, r.healthy_p99, r.policy.p50 / r.none.p50, r.policy.p99 / r.none.p99,
                  onl_x, hlt_x, fails.c_str());
    t << b;
  }
  std::snprintf(b, sizeof b,
                "\n%zu shapes, %zu with stragglers or fail-slow executors. Holding: p50 <= %.2fx none %zu/%zu, "
                "p99 <= none %zu/%zu, p99 <= %.2fx online %zu/%zu, p99 <= %.1fx healthy %zu/%zu.\n",
                rows.size(), faulty, kMatrixP50Slack, p50, rows.size(), p99, rows.size(), kMatrixOnlineSlack, onl,
                faulty, kMatrixHealthySlack, hlt, faulty);
  t << b;
  return t.str();
}

}  // namespace tailcut::sim
