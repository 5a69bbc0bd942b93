// Progress of a job or a benchmark run on stderr: a bar redrawn in place on
// a terminal, plain lines (one at the start, then at most one every few
// seconds, and one at the end) when stderr is a pipe or a file, so logs
// and CI output stay readable. `tailcut submit --wait`, `tailcut bench`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace tailcut {

struct ProgressState {
  uint64_t done = 0, total = 0;  // tasks committed / tasks
  uint64_t copies = 0;           // redundant attempts so far
  double elapsed_s = 0;
};

// Seconds left at the rate so far; none before the first task is done.
std::optional<double> ProgressEta(const ProgressState& s);
// "job 3 [#########.....] 40/100 tasks  40.0%  5 copies  2.0 s  ETA 3.0 s"
std::string ProgressBarLine(const std::string& label, const ProgressState& s, int width = 30);
// "job 3: 40/100 tasks committed (40.0%), 5 copies, 2.0 s elapsed, ETA 3.0 s"
// (no ETA once done or before the first task).
std::string ProgressPlainLine(const std::string& label, const ProgressState& s);

class ProgressPrinter {
 public:
  // `tty`: draw the bar (normally isatty(fileno(out))); else plain lines,
  // at most one per `plain_every_s` besides the first and the last.
  ProgressPrinter(std::FILE* out, bool tty, double plain_every_s = 5);
  // Stderr, bar when it is a terminal.
  ProgressPrinter();
  void Update(const std::string& label, const ProgressState& s);
  // Ends the bar's line; the next Update starts afresh.
  void End();

 private:
  std::FILE* out_;
  bool tty_;
  double every_s_;
  double last_plain_ = -1;
  bool drawn_ = false, final_printed_ = false;
};

}  // namespace tailcut
