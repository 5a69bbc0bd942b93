// The `python` kernel: Python functions on warm worker processes
// (docs/PYTHON.md, "Python functions"). Off unless the executor opts in
// (allow_python / --allow-python): a pickled function is code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/executor/kernel.h"

namespace tailcut::executor {

struct PythonOptions {
  bool allow = false;                            // allow_python
  std::string interpreter = "/usr/bin/python3";  // python
  // python_path: prepended to the workers' PYTHONPATH so that `tailcut`
  // imports; empty: the python/ folder of the tree this executor was built
  // from (TAILCUT_PYTHON_SOURCE_DIR).
  std::string path;
  std::vector<std::string> preload;  // python_preload: modules each worker imports at start
  uint32_t max_tasks = 0;            // python_max_tasks: recycle a worker after N tasks (0: never)
  uint32_t max_rss_mb = 0;           // python_max_rss_mb: recycle a worker above this RSS (0: no cap)
  // A result larger than this fails its task with the reason; the executor
  // sets it from its message limits (docs/PYTHON.md, "Limits").
  uint64_t max_result_bytes = 16u << 20;
  // How long a worker may take to stop after SIGINT before it is killed
  // and replaced.
  double cancel_grace_s = 1.0;
};

// The interpreter's "major.minor" (e.g. "3.11"), found by running it once;
// or why it cannot run.
StatusOr<std::string> ProbePythonVersion(const std::string& interpreter);

// The PYTHONPATH entry for `tailcut`: options.path, else the build's python/.
std::string PythonPackagePath(const PythonOptions& options);

// Registers the `python` kernel backed by a pool of at most `slots` warm
// workers (one per slot), started on first use. Fails if `python` is taken.
Status RegisterPythonKernel(KernelRegistry* registry, const PythonOptions& options, uint32_t slots);

}  // namespace tailcut::executor
