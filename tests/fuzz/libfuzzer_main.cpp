// libFuzzer's entry for one target, chosen at compile time
// (TAILCUT_FUZZ_ENTRY, set per executable in CMakeLists.txt).
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tailcut::fuzz::TAILCUT_FUZZ_ENTRY(data, size);
}
