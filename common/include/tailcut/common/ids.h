// Identifiers. Plain integers on the wire; 0 is never a valid id.
#pragma once

#include <cstdint>

namespace tailcut {

using JobId = uint64_t;
using AttemptId = uint64_t;
using ExecutorId = uint64_t;
using TaskIndex = uint32_t;

// The largest memory request (Resources.memory_mb) and executor memory
// (Register.memory_mb) taken, in MiB: 2^40. Larger requests are refused at
// the wire, in job files and at submission (docs/LIMITS.md); the cap keeps
// sums of them far inside uint64.
inline constexpr uint64_t kMaxMemoryMb = uint64_t{1} << 40;

}  // namespace tailcut
