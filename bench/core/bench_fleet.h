// Jobs and executors the core benchmarks share (core_bench.cpp,
// placement_bench.cpp): "sleep" no-ops of 20 ms, executors offering them.
#pragma once

#include <string>

#include "tailcut/core/types.h"

namespace tailcut::bench {

inline JobDef Fanout(uint32_t tasks) {
  JobDef d;
  d.name = "bench";
  d.templ.kernel = "sleep";
  d.templ.args = "ms=20";
  d.template_count = tasks;
  return d;
}

inline ExecutorDesc Exec(int i, uint32_t slots) {
  ExecutorDesc d;
  d.name = "e" + std::to_string(i);
  d.slots = slots;
  d.kernels = {"sleep"};
  return d;
}

}  // namespace tailcut::bench
