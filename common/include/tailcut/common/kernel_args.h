// The text argument format of the built-in kernels: whitespace-separated
// key=value pairs, e.g. "ms=50 sigma=0.3". See docs/KERNELS.md.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>
#include <string>
#include <string_view>

#include "tailcut/common/status.h"

namespace tailcut {

class KernelArgs {
 public:
  static StatusOr<KernelArgs> Parse(std::string_view text);
  bool Has(std::string_view key) const { return values_.count(std::string(key)) > 0; }
  // Default when absent; an error naming the argument when present but not
  // a finite number (nan, inf and overflowing values are errors) or, with
  // bounds, outside [lo, hi].
  Status GetDouble(std::string_view key, double* out) const;
  Status GetDouble(std::string_view key, double* out, double lo, double hi) const;
  Status GetInt(std::string_view key, int64_t* out) const;  // also rejects values beyond int64
  std::string GetString(std::string_view key, std::string def = "") const;
  std::vector<std::string> Keys() const;

 private:
  std::map<std::string, std::string> values_;
};

// One argument a kernel declares it takes (docs/KERNELS.md, "Declared
// arguments"): its name, type and range. Executors send their kernels'
// declarations when they register (Register.kernel_args); the scheduler
// refuses at submit a task whose key=value arguments no offering executor's
// kernel takes. A kernel that declares nothing (shell, exec, python, plugin
// kernels that do not declare) takes anything.
struct KernelArgSpec {
  enum class Type { kNumber, kInteger };
  std::string name;
  Type type = Type::kNumber;
  double min = -1.7976931348623157e308;
  double max = 1.7976931348623157e308;
};
// "ms (number in [0, 6.048e+08]), seed (integer)"; "none" for no arguments.
std::string DescribeKernelArgs(const std::vector<KernelArgSpec>& specs);
// Whether key=value `args` fit `specs`: each key declared, each value of its
// type and in range. A value holding {index} or {count} (a per-task
// template) is checked for its name only. The error names the kernel, the
// argument and what the kernel takes.
Status CheckKernelArgs(std::string_view kernel, std::string_view args, const std::vector<KernelArgSpec>& specs);

// The `exec` kernel's arguments (docs/KERNELS.md, "exec"): one entry per
// line, KEY=VALUE, the value the rest of the line as is (spaces, '=' and
// braces included):
//   arg=/usr/bin/python3      argv, in order; the first is the program
//   arg=train.py              (an absolute path, checked against the
//   env=SEED=7                executor's exec_allow); env NAME=VALUE
//   cwd=/data/run             adds to the environment; cwd: the working
//   cpu_s=600                 directory (default: the scratch directory);
//   memory_mb=4096            limits (0 = the executor's).
// Blank lines are skipped; a value cannot hold a line break.
struct ExecArgs {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  double cpu_s = 0;        // RLIMIT_CPU; 0 = the executor's exec_cpu_s
  uint64_t memory_mb = 0;  // RLIMIT_AS; 0 = the executor's exec_memory_mb
};
// Errors name the 1-based line: "exec args line 2: unknown key 'agr'".
StatusOr<ExecArgs> ParseExecArgs(std::string_view text);
// The text ParseExecArgs reads back (fails on a value with a line break).
StatusOr<std::string> FormatExecArgs(const ExecArgs& args);

// Per-task argument templates (TaskSpec.args_template, docs/JOBS.md): every
// `{index}` becomes the task's index and every `{count}` the job's task
// count; nothing else changes (other braces stay as they are).
std::string ExpandTaskArgs(std::string_view args, uint64_t index, uint64_t count);
// Whether `args` holds `{index}` or `{count}`: clients then set args_template.
bool HasTaskArgsTemplate(std::string_view args);

}  // namespace tailcut
