#include "work_shares.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <variant>

namespace tailcut::core {

Status ValidateDivisible(const JobDef& def) {
  if (def.divisible_units == 0) return Status::Ok();
  const uint64_t tasks = def.TaskCount();
  if (def.rule.kind != CompletionKind::kAll)
    return Status::InvalidArgument("divisible_units needs rule = all: every task's share is part of the total");
  if (def.divisible_units < tasks || def.divisible_units > kMaxDivisibleUnits)
    return Status::InvalidArgument("divisible_units must be between the task count (" + std::to_string(tasks) +
                                   ") and 2^53, got " + std::to_string(def.divisible_units));
  return Status::Ok();
}

std::vector<WorkShare> SpeedShares(uint64_t total, const std::vector<double>& speed_factors) {
  const size_t n = speed_factors.size();
  std::vector<WorkShare> out(n);
  if (n == 0) return out;
  std::vector<double> weight(n);
  for (size_t i = 0; i < n; ++i) {
    double f = speed_factors[i];
    f = std::isfinite(f) && f > 0 ? std::clamp(f, 1 / kMaxSpeedFactor, kMaxSpeedFactor) : 1.0;
    weight[i] = 1 / f;
  }
  const double weights = std::accumulate(weight.begin(), weight.end(), 0.0);
  // One unit each first (when there are enough), the rest by weight.
  const uint64_t floor_each = total >= n ? 1 : 0;
  const uint64_t rest = total - floor_each * n;
  std::vector<double> frac(n);
  uint64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double ideal = static_cast<double>(rest) * (weight[i] / weights);
    const double whole = std::floor(ideal);
    // Rounding can put the sum of floors one or two units past `rest`:
    // never hand out more than is left.
    const uint64_t c = std::min<uint64_t>(static_cast<uint64_t>(whole), rest - given);
    out[i].count = floor_each + c;
    frac[i] = ideal - whole;
    given += c;
  }
  // The units left go to the largest remainders, ties to the lower index.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return frac[a] > frac[b]; });
  for (size_t k = 0; given < rest; k = (k + 1) % n, ++given) out[order[k]].count++;
  uint64_t begin = 0;
  for (WorkShare& s : out) {
    s.begin = begin;
    s.total = total;
    begin += s.count;
  }
  return out;
}

void ShareBook::Add(JobId id, const JobDef& def) {
  if (def.divisible_units > 0) jobs_[id] = Entry{def.divisible_units, def.TaskCount(), {}};
}

void ShareBook::Stamp(std::vector<Command>* commands, std::vector<JobId>* fixed) {
  if (jobs_.empty()) return;
  // First pass: the placements of jobs whose shares are not fixed yet.
  std::unordered_map<JobId, std::vector<double>> unfixed;
  for (const Command& c : *commands) {
    const auto* l = std::get_if<LaunchCmd>(&c);
    if (!l) continue;
    auto it = jobs_.find(l->job);
    if (it == jobs_.end() || !it->second.shares.empty() || l->task >= it->second.tasks) continue;
    auto [u, fresh] = unfixed.try_emplace(l->job);
    if (fresh) u->second.assign(it->second.tasks, 0.0);  // 0: not placed in this batch
    if (u->second[l->task] == 0.0 && !l->copy)
      u->second[l->task] = speeds_ ? speeds_->SpeedFactor(l->executor) : 1.0;
  }
  for (auto& [id, factors] : unfixed) {
    for (double& f : factors)
      if (f == 0.0) f = 1.0;  // a typical executor for the tasks placed later
    Entry& e = jobs_.at(id);
    e.shares = SpeedShares(e.total, factors);
    fixed->push_back(id);
  }
  for (Command& c : *commands) {
    auto* l = std::get_if<LaunchCmd>(&c);
    if (!l) continue;
    auto it = jobs_.find(l->job);
    if (it != jobs_.end() && l->task < it->second.shares.size()) l->share = it->second.shares[l->task];
  }
}

bool ShareBook::Restore(JobId id, const std::vector<uint64_t>& counts, AttemptId since) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || counts.size() != it->second.tasks) return false;
  std::vector<WorkShare> shares(counts.size());
  uint64_t begin = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > it->second.total - begin) return false;  // past the total
    shares[i] = WorkShare{begin, counts[i], it->second.total};
    begin += counts[i];
  }
  if (begin != it->second.total) return false;
  it->second.shares = std::move(shares);
  it->second.restored_since = std::max<AttemptId>(since, 1);
  return true;
}

AttemptId ShareBook::RestoredSince(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? 0 : it->second.restored_since;
}

std::vector<uint64_t> ShareBook::Counts(JobId id) const {
  std::vector<uint64_t> out;
  if (auto it = jobs_.find(id); it != jobs_.end())
    for (const WorkShare& s : it->second.shares) out.push_back(s.count);
  return out;
}

AttemptRecord ShareBook::ForPredictors(const AttemptRecord& r) const {
  auto it = jobs_.find(r.job);
  if (it == jobs_.end() || r.task >= it->second.shares.size()) return r;
  const Entry& e = it->second;
  AttemptRecord scaled = r;
  // Time is taken as proportional to units: the premise of sharing by speed.
  scaled.run_s = r.Duration() * static_cast<double>(e.total) /
                 (static_cast<double>(e.tasks) * static_cast<double>(e.shares[r.task].count));
  return scaled;
}

}  // namespace tailcut::core
