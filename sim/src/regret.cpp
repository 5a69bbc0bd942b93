#include "tailcut/sim/regret.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tailcut/sim/matrix.h"

namespace tailcut::sim {
namespace {

// The file's first comment line, without the '#': what the scenario is.
std::string FirstComment(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) != 0) continue;
    line.erase(0, line.find_first_not_of("# "));
    if (!line.empty()) return line.size() > 90 ? line.substr(0, 87) + "..." : line;
  }
  return "";
}

}  // namespace

StatusOr<std::vector<RegretShape>> RegretShapes(const std::string& source_dir) {
  std::vector<RegretShape> out;
  for (const MatrixShape& m : MatrixShapes()) {
    auto cfg = Config::Parse(m.toml, m.name);
    if (!cfg.ok()) return cfg.status();
    auto sc = ParseScenario(std::move(cfg).value(), ".");
    if (!sc.ok()) return sc.status();
    out.push_back({m.name, m.summary, std::move(sc).value(), true});
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(source_dir + "/configs/scenarios", ec))
    if (e.path().extension() == ".toml" && e.path().stem() != "datacenter") files.push_back(e.path());
  if (ec) return Status::NotFound("no configs/scenarios under " + source_dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto sc = LoadScenario(f.string());
    if (!sc.ok()) return sc.status();
    out.push_back({f.stem().string(), FirstComment(f.string()), std::move(sc).value(), false});
  }
  return out;
}

const std::vector<std::string>& RegretFixedPolicies() {
  static const std::vector<std::string> p = {
      "none", "clone+predictive+reassign", "spark", "late", "hedge", "clone", "predictive", "reassign"};
  return p;
}

StatusOr<RegretRow> RunRegretShape(const RegretShape& shape, const std::string& entry,
                                   const std::vector<std::string>& fixed) {
  RegretRow row;
  row.shape = &shape;
  const Scenario& sc = shape.scenario;
  auto pol = RunPolicy(sc, entry, sc.seed);
  if (!pol.ok()) return pol.status();
  row.policy = std::move(pol).value();
  bool first = true;
  for (const std::string& name : fixed) {
    auto r = RunPolicy(sc, name, sc.seed);
    if (!r.ok()) {
      // A single-tenant policy on a fleet with [owners] is refused: no user
      // could have picked it there.
      if (r.status().message().find("single-tenant") == std::string::npos) return r.status();
      row.refused.push_back(name);
      continue;
    }
    if (name == "none") row.none = *r;
    if (first || r->p99 < row.best_p99) {
      row.best_p99 = r->p99;
      row.best_name = name;
      row.best_extra = r->extra_work;
    }
    row.best_p50 = first ? r->p50 : std::min(row.best_p50, r->p50);
    row.best_p999 = first ? r->p999 : std::min(row.best_p999, r->p999);
    first = false;
  }
  if (first) return Status::InvalidArgument(shape.name + ": no fixed policy ran");
  return row;
}

std::string RegretTable(const std::vector<RegretRow>& rows, const std::string& entry) {
  std::ostringstream t;
  char b[768];
  t << "| shape | what | best (p99) | none p50 / p99 / p99.9 s | " << entry
    << " p50 / p99 / p99.9 s | / none p50, p99, p99.9 | / best p50, p99, p99.9 | extra work " << entry
    << " / best |\n|---|---|---|---|---|---|---|---|\n";
  // [0]: matrix shapes, [1]: the others.
  size_t n[2] = {}, p50[2] = {}, p99[2] = {}, near[2] = {}, far[2] = {};
  for (const RegretRow& r : rows) {
    const SimResult& d = r.policy;
    const int k = r.shape->matrix ? 0 : 1;
    n[k]++;
    p50[k] += d.p50 <= kRegretP50Slack * r.none.p50;
    p99[k] += d.p99 <= r.none.p99;
    near[k] += d.p99 <= kRegretBestNear * r.best_p99;
    far[k] += d.p99 <= kRegretBestFar * r.best_p99;
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 1.0; };
    std::snprintf(b, sizeof b,
                  "| %s | %s | %s | %.4g / %.4g / %.4g | %.4g / %.4g / %.4g | %.3f, %.3f, %.3f | %.3f, **%.3f**, %.3f "
                  "| %.1f%% / %.1f%% |\n",
                  r.shape->name.c_str(), r.shape->summary.c_str(), r.best_name.c_str(), r.none.p50, r.none.p99,
                  r.none.p999, d.p50, d.p99, d.p999, ratio(d.p50, r.none.p50), ratio(d.p99, r.none.p99),
                  ratio(d.p999, r.none.p999), ratio(d.p50, r.best_p50), ratio(d.p99, r.best_p99),
                  ratio(d.p999, r.best_p999), 100 * d.extra_work, 100 * r.best_extra);
    t << b;
  }
  for (int k = 0; k < 2; ++k) {
    if (n[k] == 0) continue;
    std::snprintf(b, sizeof b,
                  "\n%s: %zu shapes. %s p50 <= %.2fx none %zu/%zu, p99 <= none %zu/%zu, p99 <= %.1fx best %zu/%zu, "
                  "p99 <= %.1fx best %zu/%zu.\n",
                  k == 0 ? "Matrix" : "Scenarios", n[k], entry.c_str(), kRegretP50Slack, p50[k], n[k], p99[k], n[k],
                  kRegretBestNear, near[k], n[k], kRegretBestFar, far[k], n[k]);
    t << b;
  }
  return t.str();
}

}  // namespace tailcut::sim
