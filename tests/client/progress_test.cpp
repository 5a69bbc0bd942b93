// Progress output (client/include/tailcut/client/progress.h): the bar's
// and the plain lines' format, and which plain lines a pipe gets.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "tailcut/client/progress.h"

using namespace tailcut;

namespace {
// What a ProgressPrinter wrote to a temporary file.
struct Captured {
  Captured() : f(std::tmpfile()) { REQUIRE(f); }
  ~Captured() { std::fclose(f); }
  std::string Text() {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
    return s;
  }
  std::FILE* f;
};
}  // namespace

TEST_CASE("progress: ETA from the rate so far, none before the first task or once done") {
  CHECK_FALSE(ProgressEta({0, 100, 0, 1.0}));
  CHECK(*ProgressEta({25, 100, 0, 2.0}) == Approx(6.0));
  CHECK_FALSE(ProgressEta({100, 100, 0, 8.0}));
}

TEST_CASE("progress: the bar and the plain line show committed / total, copies, elapsed, ETA") {
  ProgressState s{40, 100, 5, 2.0};
  CHECK(ProgressPlainLine("job 3", s) == "job 3: 40/100 tasks committed (40.0%), 5 copies, 2.0 s elapsed, ETA 3.0 s");
  CHECK(ProgressBarLine("job 3", s, 10) == "job 3 [####......] 40/100 tasks  40.0%  5 copies  2.0 s  ETA 3.0 s");
  CHECK(ProgressPlainLine("job 3", {100, 100, 7, 4.25}) ==
        "job 3: 100/100 tasks committed (100.0%), 7 copies, 4.2 s elapsed");
}

TEST_CASE("progress: not a terminal: the first line, one per interval, the last line once, no carriage return") {
  Captured out;
  ProgressPrinter p(out.f, /*tty=*/false, /*plain_every_s=*/5);
  p.Update("job 1", {0, 10, 0, 0.0});
  p.Update("job 1", {2, 10, 0, 1.0});   // within 5 s of the last line: quiet
  p.Update("job 1", {5, 10, 1, 5.5});
  p.Update("job 1", {10, 10, 1, 6.0});  // done: always shown ...
  p.Update("job 1", {10, 10, 1, 6.1});  // ... once
  p.End();
  CHECK(out.Text() ==
        "job 1: 0/10 tasks committed (0.0%), 0 copies, 0.0 s elapsed\n"
        "job 1: 5/10 tasks committed (50.0%), 1 copies, 5.5 s elapsed, ETA 5.5 s\n"
        "job 1: 10/10 tasks committed (100.0%), 1 copies, 6.0 s elapsed\n");
}

TEST_CASE("progress: a terminal: the bar redrawn in place, a newline at the end") {
  Captured out;
  ProgressPrinter p(out.f, /*tty=*/true);
  p.Update("job 1", {1, 2, 0, 1.0});
  p.Update("job 1", {2, 2, 0, 2.0});
  p.End();
  std::string t = out.Text();
  CHECK(t.rfind("\rjob 1 [", 0) == 0);
  CHECK(t.find("\rjob 1 [##############################] 2/2 tasks 100.0%  0 copies  2.0 s") != std::string::npos);
  CHECK(t.back() == '\n');
}
