#include "tailcut/executor/output_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tailcut/common/log.h"

namespace fs = std::filesystem;

namespace tailcut::executor {
namespace {

constexpr const char* kAttemptsDir = ".tailcut-attempts";

std::string TaskPrefix(uint64_t job, uint32_t task) { return std::to_string(job) + "." + std::to_string(task) + "."; }

// The task's attempt directories other than `keep` (losers, and those of
// executors killed while running them) go.
void SweepTask(const std::string& output_dir, uint64_t job, uint32_t task, const std::string& keep) {
  std::error_code ec;
  const std::string prefix = TaskPrefix(job, task);
  for (fs::directory_iterator it(fs::path(output_dir) / kAttemptsDir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) == 0 && it->path().string() != keep) RemoveAttemptOutputDir(it->path().string());
  }
}

}  // namespace

std::string AttemptOutputDir(const std::string& output_dir, uint64_t job, uint32_t task, uint64_t attempt) {
  return output_dir + "/" + kAttemptsDir + "/" + TaskPrefix(job, task) + std::to_string(attempt);
}

std::string PromotedOutputDir(const std::string& output_dir, uint32_t task) {
  return output_dir + "/task-" + std::to_string(task);
}

StatusOr<std::string> MakeAttemptOutputDir(const std::string& output_dir, uint64_t job, uint32_t task,
                                           uint64_t attempt) {
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec))
    return Status::FailedPrecondition("output_dir '" + output_dir +
                                      "' is not a directory on this executor's machine: create it there, or use a "
                                      "shared file system (docs/JOBS.md, \"Output directories\")");
  std::string dir = AttemptOutputDir(output_dir, job, task, attempt);
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create the attempt's output directory " + dir + ": " + ec.message());
  return dir;
}

void RemoveAttemptOutputDir(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) TC_LOG(Warn) << "cannot remove attempt output directory " << path << ": " << ec.message();
}

Status PromoteAttemptOutput(const std::string& output_dir, uint64_t job, uint32_t task, uint64_t attempt) {
  const std::string src = AttemptOutputDir(output_dir, job, task, attempt);
  const std::string dst = PromotedOutputDir(output_dir, task);
  std::error_code ec;
  if (!fs::exists(dst, ec)) {
    if (!fs::exists(src, ec))
      return Status::NotFound("the committed attempt's output directory " + src +
                              " does not exist (deleted, or on another machine's disk)");
    // rename(2) of a directory onto a missing name: atomic, so task-<i>
    // is either absent or complete, whoever is killed when.
    if (std::rename(src.c_str(), dst.c_str()) != 0 && !fs::exists(dst, ec))
      return Status::IoError("cannot rename " + src + " to " + dst + ": " + std::strerror(errno));
    if (int fd = open(output_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
      (void)fsync(fd);  // the rename survives a power loss too
      close(fd);
    }
  }
  SweepTask(output_dir, job, task, "");  // src too, when task-<i> was there before
  return Status::Ok();
}

}  // namespace tailcut::executor
