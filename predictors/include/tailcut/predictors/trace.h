// Attempt traces (CSV, docs/TRACE_FORMAT.md) and a synthetic trace generator
// with known ground truth.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tailcut/common/attempt_record.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/status.h"

namespace tailcut {

struct TraceRow {
  JobId job = 0;
  TaskIndex task = 0;
  ExecutorId executor = 0;
  double start = 0;
  double end = 0;
  std::string task_class;
  double input_size = 0;  // 0 = unknown
  int straggler = -1;     // ground truth 0/1, -1 = not labelled
  int fail_slow = -1;     // ground truth 0/1, -1 = not labelled
  double duration() const { return end - start; }
  // A committed AttemptRecord with this row's times (attempt id = `attempt`).
  AttemptRecord ToRecord(AttemptId attempt = 0) const;
};

inline constexpr const char* kTraceHeader = "job,task,executor,start,end,task_class,input_size,straggler,fail_slow";

// Errors name the origin and the 1-based line: "t.csv:12: end < start".
StatusOr<std::vector<TraceRow>> ParseTraceCsv(std::string_view text, std::string_view origin = "<trace>");
StatusOr<std::vector<TraceRow>> ReadTraceCsv(const std::string& path);
std::string FormatTraceCsv(const std::vector<TraceRow>& rows);  // with header
std::string FormatTraceRow(const TraceRow& row);                // one line, with its newline
Status WriteTraceCsv(const std::string& path, const std::vector<TraceRow>& rows);

struct TraceGenOptions {
  uint32_t executors = 16;         // ids 1..executors, one task at a time each
  uint64_t tasks = 10000;
  uint32_t job_size = 100;         // tasks per job (job ids from 1)
  uint32_t classes = 1;            // task classes "c0".."c{k-1}", base time x (1+i)
  double base_time = 1.0;          // seconds for input_size 1 on a healthy executor
  double sigma = 0.3;              // lognormal noise of every task (when gamma_shape = 0)
  double gamma_shape = 0;          // > 0: noise Gamma(shape, 1/shape) (mean 1) instead of lognormal
  double speed_spread = 0;         // healthy executor speeds evenly spread over [1-s, 1+s], shuffled
  double skew = 1.0;               // input_size in [1, skew]; 1 = all 1
  double size_pareto = 0;          // > 0: input_size Pareto(shape) truncated to [1, skew]; 0 = log-uniform
  double size_exponent = 1.0;      // run time ~ input_size ^ exponent
  double straggler_prob = 0.0;     // chance a task is a straggler
  double straggler_min = 3.0;      // its slowdown, uniform in [min, max]
  double straggler_max = 8.0;
  ExecutorId fail_slow_executor = 0;  // 0 = none
  double fail_slow_onset = 0;         // seconds; tasks starting at/after are slow
  double fail_slow_end = -1;          // seconds; < 0 = never recovers
  double fail_slow_factor = 3.0;
  double straggler_label_cut = 2.0;   // straggler=1 when systematic slowdown >= this
  uint64_t seed = 1;
};

// Rows in start-time order. Ground truth: straggler = 1 when the injected
// slowdown (straggler factor x fail-slow factor, noise and healthy speed
// excluded) is >= straggler_label_cut; fail_slow = 1 when the executor was
// fail-slow at start. With every new option at its default the rows are the
// same as before those options existed (same random draws).
std::vector<TraceRow> GenerateTrace(const TraceGenOptions& o);

}  // namespace tailcut
