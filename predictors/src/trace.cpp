#include "tailcut/predictors/trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <queue>
#include <random>
#include <sstream>

namespace tailcut {

AttemptRecord TraceRow::ToRecord(AttemptId attempt) const {
  AttemptRecord r;
  r.job = job;
  r.task = task;
  r.attempt = attempt;
  r.executor = executor;
  r.task_class = task_class;
  r.input_size = input_size;
  r.queued = start;
  r.started = start;
  r.finished = end;
  r.run_s = end - start;
  r.outcome = AttemptOutcome::kCommitted;
  return r;
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t c = line.find(',', pos);
    out.push_back(Trim(line.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos)));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  return out;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  // from_chars for double is available in GCC 11+.
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(*out);
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

StatusOr<std::vector<TraceRow>> ParseTraceCsv(std::string_view text, std::string_view origin) {
  enum Col { kJob, kTask, kExec, kStart, kEnd, kClass, kInput, kStraggler, kFailSlow, kNumCols };
  static const char* kNames[kNumCols] = {"job", "task", "executor", "start", "end",
                                         "task_class", "input_size", "straggler", "fail_slow"};
  int idx[kNumCols];
  std::fill(idx, idx + kNumCols, -1);
  std::vector<TraceRow> rows;
  size_t ncols = 0;
  bool have_header = false;
  size_t line_no = 0;
  size_t pos = 0;
  auto err = [&](const std::string& m) {
    return Status::InvalidArgument(std::string(origin) + ":" + std::to_string(line_no) + ": " + m);
  };
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> f = Split(line);
    if (!have_header) {
      for (size_t i = 0; i < f.size(); ++i)
        for (int c = 0; c < kNumCols; ++c)
          if (f[i] == kNames[c]) {
            if (idx[c] >= 0) return err("duplicate column '" + std::string(f[i]) + "'");
            idx[c] = static_cast<int>(i);
          }
      for (int c = 0; c <= kClass; ++c)
        if (idx[c] < 0)
          return err(std::string("header lacks required column '") + kNames[c] + "' (expected " + kTraceHeader + ")");
      ncols = f.size();
      have_header = true;
      continue;
    }
    if (f.size() != ncols)
      return err("expected " + std::to_string(ncols) + " fields, got " + std::to_string(f.size()));
    TraceRow r;
    uint64_t u = 0;
    if (!ParseU64(f[idx[kJob]], &r.job)) return err("bad job '" + std::string(f[idx[kJob]]) + "'");
    if (!ParseU64(f[idx[kTask]], &u) || u > UINT32_MAX) return err("bad task '" + std::string(f[idx[kTask]]) + "'");
    r.task = static_cast<TaskIndex>(u);
    if (!ParseU64(f[idx[kExec]], &r.executor) || r.executor == 0)
      return err("bad executor '" + std::string(f[idx[kExec]]) + "' (positive integer)");
    if (!ParseDouble(f[idx[kStart]], &r.start)) return err("bad start '" + std::string(f[idx[kStart]]) + "'");
    if (!ParseDouble(f[idx[kEnd]], &r.end)) return err("bad end '" + std::string(f[idx[kEnd]]) + "'");
    if (r.end < r.start) return err("end < start");
    r.task_class = std::string(f[idx[kClass]]);
    if (idx[kInput] >= 0 && !f[idx[kInput]].empty()) {
      if (!ParseDouble(f[idx[kInput]], &r.input_size) || r.input_size < 0)
        return err("bad input_size '" + std::string(f[idx[kInput]]) + "'");
    }
    for (int c : {kStraggler, kFailSlow}) {
      if (idx[c] < 0 || f[idx[c]].empty()) continue;
      std::string_view v = f[idx[c]];
      int b = v == "0" ? 0 : v == "1" ? 1 : -2;
      if (b < 0) return err(std::string("bad ") + kNames[c] + " '" + std::string(v) + "' (0, 1 or empty)");
      (c == kStraggler ? r.straggler : r.fail_slow) = b;
    }
    rows.push_back(std::move(r));
  }
  if (!have_header) return Status::InvalidArgument(std::string(origin) + ": empty trace (no header)");
  return rows;
}

StatusOr<std::vector<TraceRow>> ReadTraceCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot open trace " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTraceCsv(ss.str(), path);
}

std::string FormatTraceRow(const TraceRow& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu,%u,%llu,%.6f,%.6f,", static_cast<unsigned long long>(r.job), r.task,
                static_cast<unsigned long long>(r.executor), r.start, r.end);
  std::string out = buf;
  out += r.task_class;
  std::snprintf(buf, sizeof buf, ",%.6g,", r.input_size);
  out += buf;
  if (r.straggler >= 0) out += std::to_string(r.straggler);
  out += ',';
  if (r.fail_slow >= 0) out += std::to_string(r.fail_slow);
  out += '\n';
  return out;
}

std::string FormatTraceCsv(const std::vector<TraceRow>& rows) {
  std::string out = std::string(kTraceHeader) + "\n";
  for (const TraceRow& r : rows) out += FormatTraceRow(r);
  return out;
}

Status WriteTraceCsv(const std::string& path, const std::vector<TraceRow>& rows) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return Status::IoError("cannot write " + path);
  out << FormatTraceCsv(rows);
  if (!out) return Status::IoError("write failed: " + path);
  return Status::Ok();
}

std::vector<TraceRow> GenerateTrace(const TraceGenOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
  auto normal = [&] {  // Box-Muller: deterministic across standard libraries
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  };
  // Marsaglia-Tsang on our own normal/uniform draws: deterministic across
  // standard libraries. Shape < 1 via Gamma(k+1) x U^(1/k).
  auto gamma = [&](double k) {
    double boost = 1;
    if (k < 1) {
      boost = std::pow(uniform(), 1 / k);
      k += 1;
    }
    const double dd = k - 1.0 / 3, c = 1 / std::sqrt(9 * dd);
    while (true) {
      double z = normal(), v = 1 + c * z;
      if (v <= 0) continue;
      v = v * v * v;
      const double u = uniform();
      if (std::log(u) < 0.5 * z * z + dd - dd * v + dd * std::log(v)) return boost * dd * v;
    }
  };
  const uint32_t nexec = std::max<uint32_t>(o.executors, 1);
  // Healthy speeds: evenly spaced (so the extremes are always present) and
  // shuffled by a separate stream, which leaves the task draws unchanged.
  std::vector<double> speed(nexec + 1, 1.0);
  if (o.speed_spread > 0) {
    for (uint32_t i = 0; i < nexec; ++i)
      speed[i + 1] = nexec == 1 ? 1.0 : 1 - o.speed_spread + 2 * o.speed_spread * i / (nexec - 1);
    std::mt19937_64 shuffle_rng(o.seed ^ 0x5eedf00dULL);
    for (uint32_t i = nexec; i > 1; --i) std::swap(speed[i], speed[1 + shuffle_rng() % i]);
  }
  const uint32_t nclass = std::max<uint32_t>(o.classes, 1);
  const uint32_t job_size = std::max<uint32_t>(o.job_size, 1);
  using Slot = std::pair<double, ExecutorId>;  // (free at, executor)
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free;
  for (ExecutorId e = 1; e <= nexec; ++e) free.push({0.0, e});
  std::vector<TraceRow> rows;
  rows.reserve(o.tasks);
  for (uint64_t i = 0; i < o.tasks; ++i) {
    auto [t, e] = free.top();
    free.pop();
    TraceRow r;
    r.job = i / job_size + 1;
    r.task = static_cast<TaskIndex>(i % job_size);
    r.executor = e;
    r.start = t;
    uint32_t c = nclass == 1 ? 0 : static_cast<uint32_t>(uniform() * nclass) % nclass;
    char cls[16];  // snprintf, not "c" + to_string: GCC 12 -O3 warns falsely (-Wrestrict)
    std::snprintf(cls, sizeof cls, "c%u", c);
    r.task_class = cls;
    if (o.skew <= 1) {
      r.input_size = 1.0;
    } else if (o.size_pareto > 0) {  // inverse CDF of the Pareto truncated to [1, skew]
      r.input_size = std::pow(1 - uniform() * (1 - std::pow(o.skew, -o.size_pareto)), -1 / o.size_pareto);
    } else {
      r.input_size = std::exp(uniform() * std::log(o.skew));
    }
    double systematic = 1.0;
    if (o.straggler_prob > 0 && uniform() < o.straggler_prob)
      systematic *= o.straggler_min + uniform() * (o.straggler_max - o.straggler_min);
    const bool slow = o.fail_slow_executor != 0 && e == o.fail_slow_executor && t >= o.fail_slow_onset &&
                      (o.fail_slow_end < 0 || t < o.fail_slow_end);
    if (slow) systematic *= o.fail_slow_factor;
    const double noise = o.gamma_shape > 0 ? gamma(o.gamma_shape) / o.gamma_shape : std::exp(o.sigma * normal());
    const double d = o.base_time * (1.0 + c) * std::pow(r.input_size, o.size_exponent) * noise * systematic / speed[e];
    r.end = t + d;
    r.straggler = systematic >= o.straggler_label_cut ? 1 : 0;
    r.fail_slow = slow ? 1 : 0;
    free.push({r.end, e});
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace tailcut
