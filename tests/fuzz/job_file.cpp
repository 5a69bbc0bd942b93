// Job files (`tailcut submit JOB.toml`, docs/JOBS.md): the client's loader,
// then the scheduler's conversion of the JobSpec it sends.
#include <string>

#include "fuzz_targets.h"
#include "tailcut/client/client.h"
#include "wire_convert.h"

namespace tailcut::fuzz {

int JobFile(const uint8_t* data, size_t size) {
  Quiet();
  auto spec = ParseJobFile(std::string_view(reinterpret_cast<const char*>(data), size), "<fuzz>");
  if (spec.ok()) (void)JobDefFromWire(*spec);
  return 0;
}

}  // namespace tailcut::fuzz
