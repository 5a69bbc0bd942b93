// The packed form of a job's commits in the journal's `commits` table
// (journal.cpp's only user; a header to keep that file's size down).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tailcut/server/journal.h"

namespace tailcut {
namespace journal_detail {

// A job's commits in one group commit, packed (host byte order: the file
// stays on the machine that wrote it, like SQLite's WAL). Two entry kinds:
//   'R' first u32, count u32, mean run_s f32: tasks first..first+count-1,
//       for jobs that keep no outputs (a 100k-task fan-out is a few ranges,
//       not 100k rows: the journal costs little dispatch throughput);
//   'C' task u32, attempt u64, executor u64, run_s f64, length u32, output.
template <typename T>
void Put(std::string* b, T v) {
  b->append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
bool Take(const char** p, const char* end, T* v) {
  if (end - *p < static_cast<long>(sizeof(T))) return false;
  std::memcpy(v, *p, sizeof(T));
  *p += sizeof(T);
  return true;
}

// Builds one job's batch, extending the open range while tasks come in order.
struct Batch {
  std::string bytes;
  bool range_open = false;
  uint32_t first = 0, count = 0;
  double run_sum = 0;

  void Add(TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s, const std::string* output) {
    if (!output) {
      if (range_open && task == first + count) {
        count++;
        run_sum += run_s;
        return;
      }
      Close();
      range_open = true;
      first = task;
      count = 1;
      run_sum = run_s;
      return;
    }
    Close();
    bytes.push_back('C');
    Put<uint32_t>(&bytes, task);
    Put<uint64_t>(&bytes, attempt);
    Put<uint64_t>(&bytes, executor);
    Put<double>(&bytes, run_s);
    Put<uint32_t>(&bytes, static_cast<uint32_t>(output->size()));
    bytes.append(*output);
  }
  void Close() {
    if (!range_open) return;
    bytes.push_back('R');
    Put<uint32_t>(&bytes, first);
    Put<uint32_t>(&bytes, count);
    Put<float>(&bytes, static_cast<float>(run_sum / count));
    range_open = false;
  }
};

inline bool Decode(const char* p, const char* end, std::vector<CommittedOutput>* out) {
  while (p < end) {
    char kind = *p++;
    if (kind == 'R') {
      uint32_t first = 0, count = 0;
      float run = 0;
      if (!Take(&p, end, &first) || !Take(&p, end, &count) || !Take(&p, end, &run)) return false;
      for (uint32_t i = 0; i < count; ++i) out->push_back({first + i, 0, 0, run, {}});
      continue;
    }
    CommittedOutput c{};
    uint32_t len = 0;
    if (kind != 'C' || !Take(&p, end, &c.task) || !Take(&p, end, &c.attempt) || !Take(&p, end, &c.executor) ||
        !Take(&p, end, &c.run_s) || !Take(&p, end, &len) || end - p < static_cast<long>(len))
      return false;
    c.output.assign(p, len);
    p += len;
    out->push_back(std::move(c));
  }
  return true;
}

}  // namespace journal_detail
}  // namespace tailcut
