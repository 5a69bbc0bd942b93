// Executor overhead per tiny task: the network thread's whole path for a
// batch of noop assignments — parse Work, queue/run, drain, build and
// serialize the Report — minus the ZeroMQ send/recv itself.
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <mutex>

#include "tailcut/wire/wire.h"
#include "tailcut/executor/runtime.h"

using namespace tailcut;
using namespace tailcut::executor;

static void BM_NoopBatchPath(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  KernelRegistry kernels = BuiltinKernels();
  AttemptRuntime rt(RuntimeOptions{1, 1}, &kernels, nullptr, nullptr);
  AttemptId next_id = 1;
  RuntimeEvents events;
  for (auto _ : state) {
    state.PauseTiming();
    wire::SchedulerToExecutor in;
    in.set_version(kProtocolVersion);
    for (int i = 0; i < batch; ++i) {
      auto* a = in.mutable_work()->add_assign();
      a->set_attempt_id(next_id++);
      a->set_job_id(1);
      a->set_task_index(static_cast<uint32_t>(i));
      a->set_kernel("noop");
    }
    std::string bytes = in.SerializeAsString();
    state.ResumeTiming();

    wire::SchedulerToExecutor work;
    work.ParseFromString(bytes);
    std::vector<AttemptSpec> specs;
    specs.reserve(batch);
    for (wire::Assignment& a : *work.mutable_work()->mutable_assign())
      specs.push_back(AttemptSpec{a.attempt_id(), std::move(*a.mutable_kernel()), std::move(*a.mutable_args())});
    rt.Submit(std::move(specs));
    rt.DrainEvents(&events);
    wire::ExecutorMessage out;
    out.set_version(kProtocolVersion);
    auto* report = out.mutable_report();
    for (AttemptId id : events.started) report->add_started()->set_attempt_id(id);
    for (auto& r : events.results) report->add_results()->Swap(&r);
    std::string wire_bytes = out.SerializeAsString();
    benchmark::DoNotOptimize(wire_bytes.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_NoopBatchPath)->Arg(1)->Arg(64)->Arg(1024);

// Noops queued behind a real attempt: they go through a slot fiber (taken
// in runs, one lock and one event batch per run), plus the cross-thread
// wake-ups both ways.
static void BM_NoopBehindQueuedAttempt(benchmark::State& state) {
  KernelRegistry kernels = BuiltinKernels();
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  AttemptRuntime rt(RuntimeOptions{1, 1}, &kernels, nullptr, [&] {
    std::lock_guard<std::mutex> lock(mu);
    ready = true;
    cv.notify_one();
  });
  AttemptId next_id = 1;
  RuntimeEvents events;
  const int batch = 256;
  for (auto _ : state) {
    std::vector<AttemptSpec> specs;
    specs.push_back(AttemptSpec{next_id++, "sleep", "ms=0"});
    for (int i = 0; i < batch; ++i) specs.push_back(AttemptSpec{next_id++, "noop", ""});
    rt.Submit(std::move(specs));
    size_t done = 0;
    while (done < static_cast<size_t>(batch) + 1) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return ready; });
        ready = false;
      }
      rt.DrainEvents(&events);
      done += events.results.size();
    }
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_NoopBehindQueuedAttempt)->UseRealTime();

BENCHMARK_MAIN();
