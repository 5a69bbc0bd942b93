#include "tailcut/predictors/eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <queue>
#include <unordered_map>

namespace tailcut {

namespace {

enum class Ev { kEnd = 0, kAssess = 1, kStart = 2 };

struct EvalEvent {
  double t;
  Ev kind;
  size_t row;
  bool operator>(const EvalEvent& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    return row > o.row;
  }
};

struct ExecTrack {
  double first_start = -1, last_end = 0;
  int open = -1;  // index into episodes of the open episode, -1 none
  int last = -1;  // most recent episode (open or closed, for late alarms)
};

}  // namespace

EvalReport EvaluateRows(const std::vector<TraceRow>& rows, const EvalOptions& opts) {
  EvalReport rep;
  PredictorSuite suite(opts.predictor);
  rep.predictor = std::string(suite.latency().name());
  rep.attempts = rows.size();

  std::priority_queue<EvalEvent, std::vector<EvalEvent>, std::greater<>> q;
  double t0 = rows.empty() ? 0 : rows[0].start, t1 = t0;
  for (size_t i = 0; i < rows.size(); ++i) {
    q.push({rows[i].start, Ev::kStart, i});
    q.push({rows[i].end, Ev::kEnd, i});
    t0 = std::min(t0, rows[i].start);
    t1 = std::max(t1, rows[i].end);
    if (rows[i].fail_slow >= 0) rep.fail_slow_labelled = true;
  }
  rep.span_s = t1 - t0;

  std::vector<uint8_t> flag(rows.size(), 0);
  std::unordered_map<ExecutorId, ExecTrack> ex;
  std::unordered_map<ExecutorId, uint64_t> ep_tasks;
  double abs_err = 0, rel_err = 0;

  while (!q.empty()) {
    EvalEvent ev = q.top();
    q.pop();
    const TraceRow& r = rows[ev.row];
    const double d = r.duration();
    ExecTrack& et = ex[r.executor];
    switch (ev.kind) {
      case Ev::kStart: {
        if (et.first_start < 0) et.first_start = r.start;
        if (r.fail_slow == 1 && et.open < 0) {
          rep.episodes.push_back({r.executor, r.start, -1, false, 0, 0});
          et.open = et.last = static_cast<int>(rep.episodes.size()) - 1;
          ep_tasks[r.executor] = 0;
        } else if (r.fail_slow == 0 && et.open >= 0) {
          rep.episodes[static_cast<size_t>(et.open)].end = r.start;
          et.open = -1;
        }
        LatencyEstimate e = suite.Predict(r.task_class, r.input_size, r.executor);
        if (e.known() && d > 0) {
          ++rep.predicted;
          abs_err += std::abs(e.median - d);
          rel_err += std::abs(e.median - d) / d;
        }
        LatencyEstimate typ = suite.Predict(r.task_class, r.input_size, 0);
        if (typ.known()) {
          const double at = r.start + opts.assess_at * typ.median;
          if (at < r.end) q.push({at, Ev::kAssess, ev.row});
        }
        break;
      }
      case Ev::kAssess: {
        RunningAttempt a;
        a.executor = r.executor;
        a.task_class = r.task_class;
        a.input_size = r.input_size;
        a.elapsed = ev.t - r.start;
        a.progress = opts.progress && d > 0 ? a.elapsed / d : -1;
        if (suite.Assess(a).p_straggler >= opts.flag_threshold) flag[ev.row] = 1;
        break;
      }
      case Ev::kEnd: {
        et.last_end = std::max(et.last_end, r.end);
        if (r.straggler >= 0) {
          RunningAttempt a;
          a.executor = r.executor;
          a.task_class = r.task_class;
          a.input_size = r.input_size;
          a.elapsed = d * (1 - 1e-9);
          const bool mon = d > 0 && suite.Assess(a).p_straggler >= opts.flag_threshold;
          const bool truth = r.straggler == 1;
          ++rep.straggler_labelled;
          auto tally = [truth](Confusion& c, bool pred) {
            if (pred && truth) ++c.tp;
            else if (pred) ++c.fp;
            else if (truth) ++c.fn;
            else ++c.tn;
          };
          tally(rep.straggler, flag[ev.row] != 0);
          tally(rep.straggler_monitor, mon);
        }
        if (r.fail_slow != 1) ++rep.healthy_tasks;
        if (et.last >= 0 && r.start >= rep.episodes[static_cast<size_t>(et.last)].onset) ++ep_tasks[r.executor];
        suite.Observe(r.ToRecord(ev.row + 1));
        for (const auto& [e, st] : suite.HealthTransitions()) {
          if (st.state == NodeHealth::kSuspect) ++rep.suspect_alarms;
          if (st.state != NodeHealth::kFailSlow) continue;
          ++rep.fail_slow_alarms;
          ExecTrack& t = ex[e];
          // An alarm counts for the open episode, or for the latest one when
          // it comes from an attempt that started inside it.
          int epi = t.open;
          if (epi < 0 && e == r.executor && r.fail_slow == 1) epi = t.last;
          if (epi < 0) {
            ++rep.false_alarms;
            continue;
          }
          FailSlowEpisode& fe = rep.episodes[static_cast<size_t>(epi)];
          if (!fe.detected) {
            fe.detected = true;
            fe.delay_tasks = ep_tasks[e];
            fe.delay_s = ev.t - fe.onset;
          }
        }
        break;
      }
    }
  }
  if (rep.predicted) {
    rep.mae_s = abs_err / double(rep.predicted);
    rep.mape = rel_err / double(rep.predicted);
  }
  double healthy_s = 0;
  for (const auto& [e, t] : ex) healthy_s += std::max(0.0, t.last_end - t.first_start);
  for (const FailSlowEpisode& fe : rep.episodes) {
    double end = fe.end >= 0 ? fe.end : ex[fe.executor].last_end;
    healthy_s -= std::max(0.0, end - fe.onset);
  }
  rep.healthy_hours = std::max(0.0, healthy_s) / 3600.0;
  rep.false_alarms_per_hour = rep.healthy_hours > 0 ? double(rep.false_alarms) / rep.healthy_hours : 0;
  return rep;
}

StatusOr<EvalReport> EvaluateTrace(const std::string& csv_path, const EvalOptions& opts) {
  auto rows = ReadTraceCsv(csv_path);
  if (!rows.ok()) return rows.status();
  EvalReport rep = EvaluateRows(rows.value(), opts);
  rep.trace = csv_path;
  return rep;
}

namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string ConfusionJson(const Confusion& c) {
  return "{\"tp\":" + std::to_string(c.tp) + ",\"fp\":" + std::to_string(c.fp) + ",\"fn\":" + std::to_string(c.fn) +
         ",\"tn\":" + std::to_string(c.tn) + ",\"precision\":" + Num(c.Precision()) +
         ",\"recall\":" + Num(c.Recall()) + ",\"f1\":" + Num(c.F1()) + "}";
}

}  // namespace

std::string EvalReportToJson(const EvalReport& r) {
  std::string s = "{";
  s += "\"trace\":" + JsonString(r.trace);
  s += ",\"predictor\":" + JsonString(r.predictor);
  s += ",\"attempts\":" + std::to_string(r.attempts);
  s += ",\"span_s\":" + Num(r.span_s);
  s += ",\"latency\":{\"predicted\":" + std::to_string(r.predicted) + ",\"mae_s\":" + Num(r.mae_s) +
       ",\"mape\":" + Num(r.mape) + "}";
  s += ",\"straggler\":{\"labelled\":" + std::to_string(r.straggler_labelled) +
       ",\"at_point\":" + ConfusionJson(r.straggler) + ",\"monitor\":" + ConfusionJson(r.straggler_monitor) + "}";
  s += ",\"fail_slow\":{\"labelled\":" + std::string(r.fail_slow_labelled ? "true" : "false");
  s += ",\"episodes\":[";
  for (size_t i = 0; i < r.episodes.size(); ++i) {
    const FailSlowEpisode& e = r.episodes[i];
    if (i) s += ",";
    s += "{\"executor\":" + std::to_string(e.executor) + ",\"onset\":" + Num(e.onset) + ",\"end\":" + Num(e.end) +
         ",\"detected\":" + (e.detected ? "true" : "false") +
         ",\"delay_tasks\":" + (e.detected ? std::to_string(e.delay_tasks) : "null") +
         ",\"delay_s\":" + (e.detected ? Num(e.delay_s) : "null") + "}";
  }
  s += "],\"alarms\":" + std::to_string(r.fail_slow_alarms) + ",\"false_alarms\":" + std::to_string(r.false_alarms) +
       ",\"suspect_alarms\":" + std::to_string(r.suspect_alarms) + ",\"healthy_tasks\":" +
       std::to_string(r.healthy_tasks) + ",\"healthy_hours\":" + Num(r.healthy_hours) +
       ",\"false_alarms_per_hour\":" + Num(r.false_alarms_per_hour) + "}";
  s += "}";
  return s;
}

std::string FormatEvalReport(const EvalReport& r) {
  char b[512];
  std::string s;
  std::snprintf(b, sizeof b, "trace %s: %llu attempts over %.1f s, predictor %s\n", r.trace.empty() ? "<memory>" : r.trace.c_str(),
                static_cast<unsigned long long>(r.attempts), r.span_s, r.predictor.c_str());
  s += b;
  std::snprintf(b, sizeof b, "latency   median prediction at start: %llu predicted, MAE %.4g s, MAPE %.1f%%\n",
                static_cast<unsigned long long>(r.predicted), r.mae_s, 100 * r.mape);
  s += b;
  auto conf = [&](const char* what, const Confusion& c) {
    std::snprintf(b, sizeof b, "straggler %-9s precision %.3f recall %.3f F1 %.3f (tp %llu fp %llu fn %llu tn %llu)\n",
                  what, c.Precision(), c.Recall(), c.F1(), static_cast<unsigned long long>(c.tp),
                  static_cast<unsigned long long>(c.fp), static_cast<unsigned long long>(c.fn),
                  static_cast<unsigned long long>(c.tn));
    s += b;
  };
  if (r.straggler_labelled) {
    conf("at-point", r.straggler);
    conf("monitor", r.straggler_monitor);
  } else {
    s += "straggler no labels in trace\n";
  }
  for (const FailSlowEpisode& e : r.episodes) {
    if (e.detected)
      std::snprintf(b, sizeof b, "fail-slow executor %llu onset %.1f s: flagged after %llu tasks, %.1f s\n",
                    static_cast<unsigned long long>(e.executor), e.onset, static_cast<unsigned long long>(e.delay_tasks),
                    e.delay_s);
    else
      std::snprintf(b, sizeof b, "fail-slow executor %llu onset %.1f s: NOT flagged\n",
                    static_cast<unsigned long long>(e.executor), e.onset);
    s += b;
  }
  std::snprintf(b, sizeof b, "fail-slow %llu alarms, %llu false (%.3g per healthy executor-hour over %.1f h, %llu healthy tasks), %llu suspect transitions%s\n",
                static_cast<unsigned long long>(r.fail_slow_alarms), static_cast<unsigned long long>(r.false_alarms),
                r.false_alarms_per_hour, r.healthy_hours, static_cast<unsigned long long>(r.healthy_tasks),
                static_cast<unsigned long long>(r.suspect_alarms), r.fail_slow_labelled ? "" : " (trace has no fail_slow labels)");
  s += b;
  return s;
}

}  // namespace tailcut
