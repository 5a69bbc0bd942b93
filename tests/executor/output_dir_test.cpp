// Attempt output directories on the executor's side (docs/JOBS.md, "Output
// directories"): private per attempt, promoted once by rename, idempotent.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tailcut/executor/output_dir.h"

using namespace tailcut;
using namespace tailcut::executor;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("tailcut-outdir-" + std::to_string(getpid()) + "-" +
                                                std::to_string(++counter))) {
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static inline int counter = 0;
  fs::path path;
};

void Write(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(fs::path(dir) / name) << text;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

size_t Entries(const fs::path& dir) {
  std::error_code ec;
  size_t n = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
  return n;
}

}  // namespace

TEST_CASE("an attempt's output directory is private, and missing output_dir is a clear error") {
  TempDir tmp;
  const std::string out = tmp.path.string();
  auto a = MakeAttemptOutputDir(out, 3, 1, 70);
  auto b = MakeAttemptOutputDir(out, 3, 1, 71);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == out + "/.tailcut-attempts/3.1.70");
  CHECK(*a != *b);
  CHECK(fs::is_directory(*a));
  auto missing = MakeAttemptOutputDir(out + "/nope", 3, 1, 72);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("output_dir '" + out + "/nope' is not a directory on this executor's machine") ==
        0);
}

TEST_CASE("promotion renames the committed attempt's directory once and removes the task's others") {
  TempDir tmp;
  const std::string out = tmp.path.string();
  auto winner = MakeAttemptOutputDir(out, 3, 1, 70);
  auto loser = MakeAttemptOutputDir(out, 3, 1, 71);
  auto other_task = MakeAttemptOutputDir(out, 3, 2, 72);
  REQUIRE(winner.ok());
  REQUIRE(loser.ok());
  REQUIRE(other_task.ok());
  Write(*winner, "part", "winner");
  Write(*loser, "part", "loser");
  REQUIRE(PromoteAttemptOutput(out, 3, 1, 70).ok());
  CHECK(Read(tmp.path / "task-1" / "part") == "winner");
  CHECK_FALSE(fs::exists(*winner));
  CHECK_FALSE(fs::exists(*loser));     // the losing copy's directory is gone
  CHECK(fs::exists(*other_task));      // another task's is not touched

  // Again (a resend, or the scheduler restarted before it heard): a no-op.
  REQUIRE(PromoteAttemptOutput(out, 3, 1, 70).ok());
  CHECK(Read(tmp.path / "task-1" / "part") == "winner");
  // Even for another attempt: task-1 is never replaced, the late one is dropped.
  auto late = MakeAttemptOutputDir(out, 3, 1, 75);
  REQUIRE(late.ok());
  Write(*late, "part", "late");
  REQUIRE(PromoteAttemptOutput(out, 3, 1, 75).ok());
  CHECK(Read(tmp.path / "task-1" / "part") == "winner");
  CHECK_FALSE(fs::exists(*late));
  CHECK(Entries(tmp.path / ".tailcut-attempts") == 1);  // task 2's attempt only

  // Neither the attempt's directory nor task-<i> here: another machine's disk, or deleted.
  Status gone = PromoteAttemptOutput(out, 3, 4, 80);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.code() == Status::Code::kNotFound);
  CHECK_FALSE(fs::exists(tmp.path / "task-4"));
}
