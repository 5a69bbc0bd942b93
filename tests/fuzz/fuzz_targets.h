// The fuzz targets' entry functions (docs/SECURITY.md, "Fuzzing"). Each
// takes one input's bytes and drives the code under test the way the
// daemons do; it returns 0 (libFuzzer's convention) and must never crash,
// leak or hit undefined behaviour, whatever the bytes. The libFuzzer
// binaries (TAILCUT_FUZZ=ON) and the tests/security replay test both call
// them, so a crash found by fuzzing replays in the normal gcc build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tailcut::fuzz {

using Entry = int (*)(const uint8_t* data, size_t size);

// The scheduler's executor socket: ExecutorMessage -> Register/Report into a core.
int ExecutorMessage(const uint8_t* data, size_t size);
// The scheduler's client socket: ClientRequest -> JobDefFromWire -> SubmitJob.
int ClientRequest(const uint8_t* data, size_t size);
// The executor: SchedulerToExecutor -> assignments' kernel arguments.
int SchedulerToExecutor(const uint8_t* data, size_t size);
// The client: ClientReply as Client and the CLI read it.
int ClientReply(const uint8_t* data, size_t size);
// TOML config loaders: scheduler daemon, scheduling, executor, sim scenario.
int ConfigToml(const uint8_t* data, size_t size);
// Trace CSV: predictors' parser, evaluation, sim's trace jobs.
int TraceCsv(const uint8_t* data, size_t size);
// Job files (`tailcut submit JOB.toml`) -> JobSpec -> JobDefFromWire.
int JobFile(const uint8_t* data, size_t size);

struct Target {
  std::string_view name;  // the folder name under tests/fuzz/corpus and tests/security/crashes
  Entry entry;
};
std::span<const Target> Targets();

// Silences logging once, ours and protobuf's (fuzzing speed: bad input is
// logged).
void Quiet();

}  // namespace tailcut::fuzz
