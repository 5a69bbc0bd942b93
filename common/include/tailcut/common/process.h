// Starting local daemons: the demo, `tailcut train` and the live benchmark
// run executor processes next to the `tailcut` binary.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tailcut {

// The folder holding the running executable (the current folder if unknown).
std::filesystem::path ExecutableDir();

// Starts argv[0] with argv, stdin from /dev/null and stdout + stderr
// appended to `log_path`. Returns the child's pid, or -1.
pid_t SpawnProcess(const std::vector<std::string>& argv, const std::string& log_path);

}  // namespace tailcut
