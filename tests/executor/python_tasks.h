// The python kernel's tests' helpers (python_batch_test.cpp,
// python_worker_test.cpp): tasks of tests/executor/batch_tasks.py as the
// python client sends them, what they recorded, and a one-slot runtime.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime_collector.h"
#include "tailcut/executor/python.h"
#include "tailcut/executor/runtime.h"

namespace tailcut::executor::testing {

// batch_tasks:<fn>(path, i) as the python client sends it
// (python/tailcut/_pickling.py): pickle.dumps(((path, i), {}), protocol=5)
// written out by hand; with `pad` bytes, batch_tasks:<fn>(path, i, "a" * pad).
inline std::string PythonTask(const std::string& fn, const std::string& path, uint8_t i, uint32_t pad = 0) {
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [](uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  std::string stream = std::string("\x80\x05X", 3) + u32(static_cast<uint32_t>(path.size())) + path + "K" +
                       std::string(1, static_cast<char>(i));
  stream += pad > 0 ? "X" + u32(pad) + std::string(pad, 'a') + "\x87" : std::string("\x86");
  stream += "}\x86.";
  const std::string ref = "batch_tasks:" + fn;
  return std::string("TCPY\x01M", 6) + u32(static_cast<uint32_t>(ref.size())) + ref + u32(0) + u64(stream.size()) +
         stream;
}

// The "<i> <pid>" lines batch_tasks wrote: task -> the pids it ran on.
inline std::map<int, std::vector<std::string>> Runs(const std::string& path) {
  std::map<int, std::vector<std::string>> out;
  std::ifstream in(path);
  int i;
  std::string pid;
  while (in >> i >> pid) out[i].push_back(pid);
  return out;
}

inline bool HavePython() { return access("/usr/bin/python3", X_OK) == 0; }

// Where batch_tasks notes its runs: a fresh folder per test.
inline std::string RunsPath() {
  char dir[] = "/tmp/tailcut-batch-XXXXXX";
  REQUIRE(mkdtemp(dir));
  return std::string(dir) + "/runs";
}
inline void RemoveRuns(const std::string& path) {
  unlink(path.c_str());
  rmdir(path.substr(0, path.rfind('/')).c_str());
}

// The python kernel registered so that its workers import batch_tasks; `ok`
// false (and a warning) without python3.
struct PythonKernel {
  PythonKernel() {
    if (!ok) {
      WARN("no /usr/bin/python3: the python kernel is not run");
      return;
    }
    setenv("PYTHONPATH", TAILCUT_SOURCE_DIR "/tests/executor", 1);  // batch_tasks; the pool prepends tailcut's
    REQUIRE(RegisterPythonKernel(&kernels, PythonOptions{}, 1).ok());
    path = RunsPath();
  }
  ~PythonKernel() {
    if (ok) RemoveRuns(path);
  }
  const bool ok = HavePython();
  KernelRegistry kernels;
  std::string path;
};

// The same in a one-slot runtime.
struct PythonRuntime : PythonKernel {
  PythonRuntime() {
    if (!ok) return;
    rt = std::make_unique<AttemptRuntime>(RuntimeOptions{1, 1}, &kernels, nullptr, nullptr);
    ev = std::make_unique<Collector>(rt.get());
  }
  ~PythonRuntime() {
    ev.reset();
    rt.reset();  // its workers first
  }
  AttemptSpec Spec(AttemptId id, const std::string& fn, uint8_t i, uint32_t pad = 0) const {
    return AttemptSpec{id, "python", PythonTask(fn, path, i, pad)};
  }
  std::unique_ptr<AttemptRuntime> rt;
  std::unique_ptr<Collector> ev;
};

}  // namespace tailcut::executor::testing
