// The scheduler's attempt-trace recorder (tailcut/server/trace_recorder.h):
// committed attempts only, the format the predictors and `tailcut whatif`
// read, and a file that rotates instead of growing without bound.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "tailcut/server/trace_recorder.h"

using namespace tailcut;

namespace {

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "." + std::to_string(getpid()) + ".csv"))
      .string();
}

AttemptRecord Committed(JobId job, TaskIndex task, ExecutorId exec, double start, double run_s) {
  AttemptRecord r;
  r.job = job;
  r.task = task;
  r.attempt = job * 100 + task;
  r.executor = exec;
  r.task_class = "sleep";
  r.queued = start - 0.01;
  r.started = start;
  r.finished = start + run_s + 0.002;
  r.run_s = run_s;
  r.outcome = AttemptOutcome::kCommitted;
  return r;
}

}  // namespace

TEST_CASE("trace recorder writes committed attempts in the trace format", "[trace]") {
  const std::string path = TempPath("tailcut_trace_rec");
  std::remove(path.c_str());
  {
    auto t = TraceRecorder::Open({path, 1 << 20});
    REQUIRE(t.ok());
    (*t)->OnAttemptEnded(Committed(1, 0, 2, 10.0, 0.5));
    AttemptRecord lost = Committed(1, 1, 3, 10.0, 0.7);
    lost.outcome = AttemptOutcome::kSuperseded;  // a copy that lost: not a row
    (*t)->OnAttemptEnded(lost);
    AttemptRecord odd = Committed(2, 3, 4, 11.0, 0.25);
    odd.task_class = "a,b\nc";  // the format has no quoting
    odd.input_size = 42;
    (*t)->OnAttemptEnded(odd);
    CHECK((*t)->rows() == 2);
    CHECK((*t)->status().ok());
  }
  auto rows = ReadTraceCsv(path);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].job == 1);
  CHECK((*rows)[0].executor == 2);
  CHECK((*rows)[0].duration() == Approx(0.5));
  CHECK((*rows)[1].task == 3);
  CHECK((*rows)[1].task_class == "a_b_c");
  CHECK((*rows)[1].input_size == Approx(42));
  // Reopening appends without a second header.
  {
    auto t = TraceRecorder::Open({path, 1 << 20});
    REQUIRE(t.ok());
    (*t)->OnAttemptEnded(Committed(3, 0, 1, 12.0, 1.0));
  }
  rows = ReadTraceCsv(path);
  REQUIRE(rows.ok());
  CHECK(rows->size() == 3);
  std::remove(path.c_str());
}

TEST_CASE("trace recorder rotates at its size limit", "[trace]") {
  const std::string path = TempPath("tailcut_trace_rot");
  std::remove(path.c_str());
  std::remove((path + ".1").c_str());
  const uint64_t limit = 4096;
  {
    auto t = TraceRecorder::Open({path, limit});
    REQUIRE(t.ok());
    for (int i = 0; i < 500; ++i) (*t)->OnAttemptEnded(Committed(1 + i / 10, i % 10, 1, i, 0.1));
    CHECK((*t)->rotations() > 0);
    CHECK((*t)->rows() == 500);
  }
  CHECK(std::filesystem::file_size(path) <= limit);
  CHECK(std::filesystem::file_size(path + ".1") <= limit);
  // Both files parse on their own: each starts with the header.
  auto now = ReadTraceCsv(path), older = ReadTraceCsv(path + ".1");
  REQUIRE(now.ok());
  REQUIRE(older.ok());
  CHECK(now->back().start == Approx(499));
  CHECK(older->back().start + 1 == Approx(now->front().start));
  std::remove(path.c_str());
  std::remove((path + ".1").c_str());
  CHECK_FALSE(TraceRecorder::Open({path, 100}).ok());  // too small to hold a row
  CHECK_FALSE(TraceRecorder::Open({"", limit}).ok());
}

TEST_CASE("recent trace keeps the newest rows in a ring and finds a job's, oldest first", "[trace]") {
  RecentTrace ring(4);
  AttemptRecord lost = Committed(1, 9, 1, 0.5, 0.1);
  lost.outcome = AttemptOutcome::kSuperseded;
  ring.OnAttemptEnded(lost);  // only committed attempts are rows
  CHECK(ring.size() == 0);
  for (TaskIndex t = 0; t < 3; ++t) ring.OnAttemptEnded(Committed(1, t, 1, 1.0 + t, 0.1));
  ring.OnAttemptEnded(Committed(2, 0, 2, 4.0, 0.2));
  REQUIRE(ring.RowsOf(1).size() == 3);
  CHECK(ring.RowsOf(2).size() == 1);
  CHECK(ring.RowsOf(3).empty());
  // Full: two more rows overwrite job 1's two oldest.
  ring.OnAttemptEnded(Committed(2, 1, 2, 5.0, 0.2));
  ring.OnAttemptEnded(Committed(1, 3, 1, 6.0, 0.1));
  CHECK(ring.size() == 4);
  std::vector<TraceRow> rows = ring.RowsOf(1);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].task == 2);
  CHECK(rows[1].task == 3);
  CHECK(rows[1].executor == 1);
  CHECK(rows[1].end - rows[1].start == Approx(0.1));
  CHECK(ring.RowsOf(2).size() == 2);
  CHECK(ring.jobs() == 2);
  // Four more of job 2 overwrite job 1's last row: its chain goes.
  for (TaskIndex t = 2; t < 6; ++t) ring.OnAttemptEnded(Committed(2, t, 2, 6.0 + t, 0.2));
  CHECK(ring.RowsOf(1).empty());
  CHECK(ring.jobs() == 1);
  ring.OnAttemptEnded(Committed(3, 0, 1, 11.0, 0.1));
  REQUIRE(ring.RowsOf(2).size() == 3);
  CHECK(ring.RowsOf(2)[0].task == 3);
  CHECK(ring.RowsOf(2)[2].task == 5);
  CHECK(ring.RowsOf(3).size() == 1);
  for (TaskIndex t = 1; t < 8; ++t) ring.OnAttemptEnded(Committed(3, t, 1, 11.0 + t, 0.1));
  REQUIRE(ring.RowsOf(3).size() == 4);  // a job wrapping the ring on its own
  CHECK(ring.RowsOf(3)[0].task == 4);
  CHECK(ring.RowsOf(3)[3].task == 7);
  CHECK(ring.jobs() == 1);

  RecentTrace off(0);
  off.OnAttemptEnded(Committed(1, 0, 1, 1.0, 0.1));
  CHECK(off.RowsOf(1).empty());
}
