// Identifiers. Plain integers on the wire; 0 is never a valid id.
#pragma once

#include <cstdint>

namespace tailcut {

using JobId = uint64_t;
using AttemptId = uint64_t;
using ExecutorId = uint64_t;
using TaskIndex = uint32_t;

}  // namespace tailcut
