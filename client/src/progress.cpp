#include "tailcut/client/progress.h"

#include <unistd.h>

#include <algorithm>

namespace tailcut {

namespace {
std::string Format(const char* fmt, auto... args) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, fmt, args...);
  return std::string(buf, static_cast<size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
}
unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }
double Percent(const ProgressState& s) { return s.total ? 100.0 * static_cast<double>(s.done) / s.total : 0; }
}  // namespace

std::optional<double> ProgressEta(const ProgressState& s) {
  if (s.done == 0 || s.done >= s.total) return std::nullopt;
  return s.elapsed_s * static_cast<double>(s.total - s.done) / static_cast<double>(s.done);
}

std::string ProgressBarLine(const std::string& label, const ProgressState& s, int width) {
  int filled = static_cast<int>(Percent(s) / 100 * width);
  std::string bar(static_cast<size_t>(std::clamp(filled, 0, width)), '#');
  bar.resize(static_cast<size_t>(width), '.');
  auto eta = ProgressEta(s);
  return Format("%s [%s] %llu/%llu tasks %5.1f%%  %llu copies  %.1f s", label.c_str(), bar.c_str(), U(s.done),
                U(s.total), Percent(s), U(s.copies), s.elapsed_s) +
         (eta ? Format("  ETA %.1f s", *eta) : std::string());
}

std::string ProgressPlainLine(const std::string& label, const ProgressState& s) {
  auto eta = ProgressEta(s);
  return Format("%s: %llu/%llu tasks committed (%.1f%%), %llu copies, %.1f s elapsed", label.c_str(), U(s.done),
                U(s.total), Percent(s), U(s.copies), s.elapsed_s) +
         (eta ? Format(", ETA %.1f s", *eta) : std::string());
}

ProgressPrinter::ProgressPrinter(std::FILE* out, bool tty, double plain_every_s)
    : out_(out), tty_(tty), every_s_(plain_every_s) {}

ProgressPrinter::ProgressPrinter() : ProgressPrinter(stderr, isatty(STDERR_FILENO) != 0) {}

void ProgressPrinter::Update(const std::string& label, const ProgressState& s) {
  if (tty_) {
    // Trailing spaces wipe what a longer previous line left.
    std::fprintf(out_, "\r%s    ", ProgressBarLine(label, s).c_str());
    std::fflush(out_);
    drawn_ = true;
    return;
  }
  bool final = s.total > 0 && s.done >= s.total;
  if (final ? final_printed_ : (last_plain_ >= 0 && s.elapsed_s - last_plain_ < every_s_)) return;
  std::fprintf(out_, "%s\n", ProgressPlainLine(label, s).c_str());
  std::fflush(out_);
  last_plain_ = s.elapsed_s;
  final_printed_ = final;
}

void ProgressPrinter::End() {
  if (drawn_) std::fputc('\n', out_);
  drawn_ = false;
  final_printed_ = false;
  last_plain_ = -1;
}

}  // namespace tailcut
