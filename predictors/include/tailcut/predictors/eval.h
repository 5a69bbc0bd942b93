// Offline evaluation: replay an attempt trace in time order through a
// PredictorSuite and score its predictions against the trace's ground truth.
//
// Replay (event-driven, ties: ends before assessments before starts):
//  * start of an attempt: record the suite's median prediction for it
//    (Predict(class, input, executor)) -> MAE / MAPE against its duration;
//    schedule an assessment at elapsed = assess_at x typical median.
//  * assessment: Assess() with progress = elapsed / duration when
//    `progress` is set (the LATE assumption: constant progress rate), else
//    unknown; flagged when p_straggler >= flag_threshold. Attempts that end
//    before the assessment point, or have no prediction, are not flagged.
//  * "monitor" flags (reported separately): Assess() without progress just
//    before the attempt ends, i.e. whether continuous polling would ever
//    have flagged it.
//  * end: Observe() the attempt; FAIL_SLOW transitions are matched against
//    the fail_slow column (see docs/PREDICTORS.md for the episode rules).
#pragma once

#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/predictors/predictor.h"
#include "tailcut/predictors/trace.h"

namespace tailcut {

struct EvalOptions {
  PredictorOptions predictor;
  double assess_at = 1.0;       // x typical predicted median
  double flag_threshold = 0.5;  // p_straggler >= this -> predicted straggler
  bool progress = true;         // assessment sees linear progress
};

struct Confusion {
  uint64_t tp = 0, fp = 0, fn = 0, tn = 0;
  double Precision() const { return tp + fp ? double(tp) / double(tp + fp) : 0; }
  double Recall() const { return tp + fn ? double(tp) / double(tp + fn) : 0; }
  double F1() const {
    double p = Precision(), r = Recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0;
  }
};

struct FailSlowEpisode {
  ExecutorId executor = 0;
  Time onset = 0;           // start of its first fail_slow=1 attempt
  Time end = -1;            // start of the next fail_slow=0 attempt; -1 = trace end
  bool detected = false;    // FAIL_SLOW reported during the episode
  uint64_t delay_tasks = 0; // attempts on the executor observed since onset, incl. the flagging one
  double delay_s = 0;       // flag time - onset
};

struct EvalReport {
  std::string trace;
  std::string predictor;
  uint64_t attempts = 0;
  double span_s = 0;
  // Latency (median prediction made at attempt start).
  uint64_t predicted = 0;  // attempts that had a known prediction
  double mae_s = 0;
  double mape = 0;         // fraction, 0.1 = 10%
  // Stragglers (attempts with a straggler label only).
  uint64_t straggler_labelled = 0;
  Confusion straggler;          // at assess_at, per EvalOptions
  Confusion straggler_monitor;  // continuous polling, no progress
  // Fail-slow.
  bool fail_slow_labelled = false;
  std::vector<FailSlowEpisode> episodes;
  uint64_t fail_slow_alarms = 0;  // all transitions to FAIL_SLOW
  uint64_t false_alarms = 0;      // FAIL_SLOW outside any ground-truth episode
  uint64_t suspect_alarms = 0;    // transitions to SUSPECT (informational)
  uint64_t healthy_tasks = 0;     // attempts with fail_slow != 1
  double healthy_hours = 0;       // executor-hours outside episodes
  double false_alarms_per_hour = 0;
};

StatusOr<EvalReport> EvaluateTrace(const std::string& csv_path, const EvalOptions& opts);
// Added: the same on rows already in memory (any order).
EvalReport EvaluateRows(const std::vector<TraceRow>& rows, const EvalOptions& opts);

std::string EvalReportToJson(const EvalReport& r);
std::string FormatEvalReport(const EvalReport& r);  // human-readable, multi-line

}  // namespace tailcut
