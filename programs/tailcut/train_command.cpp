// tailcut train: a real coded workload end to end.
//
// Starts a scheduler (in this process) and n executor daemons, one of them a
// 5x straggler, generates a regression data set split over the n workers,
// and runs distributed full-batch gradient descent twice: (a) uncoded — each
// round waits for all n workers — and (b) gradient coding (Tandon et al.) —
// each round finishes with any n - s workers and decodes the exact gradient.
// and (c) speed-proportional shares (docs/JOBS.md) — a divisible job over
// all rows whose tasks the scheduler sizes by each executor's measured
// speed, so the straggler gets a smaller share. All follow the same
// iterates (same data, same total batch per step), so they must reach the
// same loss; coding and speed shares should make each round faster than
// waiting for the straggler's full share.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "commands.h"
#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/coding/gradient_code.h"
#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "tailcut/common/stats.h"
#include "tailcut/policies/coded_jobs.h"
#include "tailcut/policies/registry.h"
#include "tailcut/server/server.h"

namespace tailcut::cli {
namespace {

const char kTrainUsage[] = R"(usage: tailcut train [options]

Distributed gradient descent on a local cluster (a scheduler in this process,
N executor daemons, the last one a straggler), run three times over the same
data: uncoded (k_of_n with k = N: every worker, every iteration, equal
shares), gradient-coded (any N - S of N workers; docs/GPU.md) and speed
shares (one divisible job over all rows, each task's share sized by its
executor's measured speed; docs/JOBS.md). Prints per-iteration time
statistics, the final losses (they must agree to 1e-6 relative) and the
speedups. Exit code 1 when the losses differ or a round fails; the speedups
are measurements, reported and not checked (docs/TRAINING.md says when
coding wins and when moving its data costs more).

  --model lsq|logistic   least squares (default) or logistic regression
  --workers N            workers = executors = data partitions (default 3)
  --stragglers S         stragglers tolerated by the code (default 1)
  --code fr|cyclic       fractional or cyclic repetition (default fr when
                         S+1 divides N, else cyclic)
  --iters T              gradient steps per run (default 15)
  --rows R               rows per partition (default 2000)
  --dim D                features (default 16)
  --slowdown F           the straggling executor's slowdown (default 5)
  --lr L                 step size on the mean gradient (default 0.5 lsq, 2 logistic)
  --seed N               data seed (default 1)
  --placement NAME       the scheduler's placement (default first_free: each
                         task runs where a slot is free, as plain data
                         parallelism does; expected_finish, the daemon's
                         default, holds tasks off the slow worker)
  --policy CHAIN         mitigation policies (default none; e.g. default)
  --gpu                  tasks request a GPU (Resources.gpus = 1): needs CUDA executors
  --json                 one JSON object instead of the table
)";

wire::JobSpec ToWire(const JobDef& d, bool gpu);

// The speed-shares round: N tasks over the same all-rows args, the rows
// shared out by the scheduler (divisible_units = all rows, rule all).
// input_size is an equal share's (docs/JOBS.md).
wire::JobSpec SpeedShareRound(const std::string& prefix, const std::vector<double>& w, int n, double rows,
                              uint64_t total_rows, bool gpu, std::string name) {
  JobDef d;
  d.name = std::move(name);
  std::string args = prefix;
  coded::AppendReals(&args, w);
  // N copies of one template: the args (all rows) go to the scheduler once.
  wire::JobSpec spec = ToWire(d, gpu);
  wire::TaskSpec* t = spec.mutable_template_();
  t->set_kernel(coded::kGradientKernel);
  t->set_args(std::move(args));
  t->mutable_demand()->set_cpu_slots(1);
  if (gpu) t->mutable_demand()->set_gpus(1);
  t->mutable_features()->set_input_size(rows);
  spec.set_template_count(static_cast<uint32_t>(n));
  spec.mutable_rule()->set_kind(wire::CompletionRule::ALL);
  spec.set_divisible_units(total_rows);
  return spec;
}

wire::JobSpec ToWire(const JobDef& d, bool gpu) {
  wire::JobSpec spec;
  spec.set_name(d.name);
  for (const TaskDef& t : d.tasks) {
    wire::TaskSpec* w = spec.add_tasks();
    w->set_kernel(t.kernel);
    w->set_args(t.args);
    w->mutable_demand()->set_cpu_slots(1);
    if (gpu) w->mutable_demand()->set_gpus(1);
    w->mutable_features()->set_input_size(t.input_size);
  }
  spec.mutable_rule()->set_kind(d.rule.kind == CompletionKind::kKOfN ? wire::CompletionRule::K_OF_N
                                                                      : wire::CompletionRule::ALL);
  spec.mutable_rule()->set_k(d.rule.k);
  spec.set_return_outputs(true);
  spec.set_stream_results(true);
  return spec;
}

struct RunStats {
  std::vector<double> iter_s;
  std::vector<double> task_s;  // executor-measured run time of committed tasks (not the straggler's)
  std::vector<double> straggler_task_s;  // ... and of the straggler's
  double loss = 0;
  int used_straggler = 0;  // iterations that waited for the straggler's result
};

double TotalLoss(coded::Loss loss, const std::vector<coded::LsqPartition>& parts, const std::vector<double>& w,
                 double rows) {
  double sum = 0;
  for (const auto& p : parts) sum += coded::PartitionLoss(loss, p, w);
  return sum / rows;
}

}  // namespace

int RunTrain(const Args& a) {
  if (a.Has("--help") || a.Has("-h")) return std::fputs(kTrainUsage, stdout), kExitOk;
  const std::string model = a.Get("--model", "lsq");
  if (model != "lsq" && model != "logistic") {
    std::fprintf(stderr, "tailcut train: --model must be lsq or logistic\n");
    return kExitUsage;
  }
  const coded::Loss loss = model == "logistic" ? coded::Loss::kLogistic : coded::Loss::kLeastSquares;
  // Three workers by default: one executor process per worker, and this
  // machine class has two cores. With more workers than cores + 1 the
  // (s+1)-fold work of coding competes for CPU; on a cluster each worker
  // has its own machine (docs/GPU.md shows both).
  const int n = static_cast<int>(a.Int("--workers", 3, 2, 64));
  const int s = static_cast<int>(a.Int("--stragglers", 1, 0, n - 1));
  // Fractional repetition when (s+1) divides n (exact, best conditioned), else cyclic.
  const std::string code_kind = a.Get("--code", n % (s + 1) == 0 ? "fr" : "cyclic");
  const int iters = static_cast<int>(a.Int("--iters", 15, 1, 1000000));
  const int rows = static_cast<int>(a.Int("--rows", 2000, 1, 10000000));
  const int dim = static_cast<int>(a.Int("--dim", 16, 1, 100000));
  const double slowdown = a.Double("--slowdown", 5, 1, 1000);
  const double lr = a.Double("--lr", loss == coded::Loss::kLogistic ? 2 : 0.5, 1e-12, 1e6);
  const uint64_t seed = static_cast<uint64_t>(a.Int("--seed", 1, 0, INT64_MAX));
  if (!a.error().empty()) {
    std::fprintf(stderr, "tailcut train: %s\n", a.error().c_str());
    return kExitUsage;
  }
  const std::string placement = a.Get("--placement", "first_free");
  CoreOptions core_options;  // the [core] reader checks the name, as for the daemon
  Config placement_cfg;
  Status placement_ok = placement_cfg.Override("core.placement=" + placement);
  if (placement_ok.ok()) placement_ok = LoadCoreOptions(placement_cfg, "core", &core_options);
  if (!placement_ok.ok()) {
    std::fprintf(stderr, "tailcut train: --placement: %s\n", placement_ok.message().c_str());
    return kExitUsage;
  }
  const std::string policy = a.Get("--policy", "none");
  auto chain = MakePolicyChain(policy, Config());
  if (!chain.ok()) {
    std::fprintf(stderr, "tailcut train: %s\n", chain.status().message().c_str());
    return kExitUsage;
  }
  const bool gpu = a.Has("--gpu");
  const bool json = a.Has("--json");

  auto uncoded_code = coding::GradientCode::FractionalRepetition(n, 0);  // B = I, k = n
  auto coded_code = code_kind == "cyclic" ? coding::GradientCode::CyclicRepetition(n, s)
                                          : coding::GradientCode::FractionalRepetition(n, s);
  if (code_kind != "fr" && code_kind != "cyclic") {
    std::fprintf(stderr, "tailcut train: --code must be fr or cyclic\n");
    return kExitUsage;
  }
  if (!uncoded_code.ok() || !coded_code.ok()) {
    std::fprintf(stderr, "tailcut train: %s\n",
                 (!coded_code.ok() ? coded_code.status() : uncoded_code.status()).message().c_str());
    return kExitUsage;
  }

  // The data: X ~ N(0,1); least squares y = X w* + 0.1 noise, logistic
  // y ~ Bernoulli(sigmoid(X w*)). Values are rounded to multiples of 2^-6
  // (X) and 2^-10 (y) so their exact text form is short: the kernels' args
  // are text, and shorter numbers mean less to send and parse.
  auto quantize = [](double v, double scale) { return std::round(v * scale) / scale; };
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> w_true(static_cast<size_t>(dim));
  for (double& v : w_true) v = normal(rng) * 2.0 / std::sqrt(static_cast<double>(dim));
  std::vector<coded::LsqPartition> parts(static_cast<size_t>(n));
  for (auto& p : parts) {
    p.x = coding::Matrix(rows, dim);
    p.y.resize(static_cast<size_t>(rows));
    for (int i = 0; i < rows; ++i) {
      double z = 0;
      for (int j = 0; j < dim; ++j) {
        p.x(i, j) = quantize(normal(rng), 64);
        z += p.x(i, j) * w_true[j];
      }
      p.y[i] = loss == coded::Loss::kLogistic ? (uniform(rng) < 1.0 / (1.0 + std::exp(-z)) ? 1.0 : 0.0)
                                              : quantize(z + 0.1 * normal(rng), 1024);
    }
  }
  const double total_rows = static_cast<double>(n) * rows;
  auto uncoded_jobs = coded::GradientRoundJobs::Create(*uncoded_code, parts, dim, loss);
  auto coded_jobs = coded::GradientRoundJobs::Create(*coded_code, parts, dim, loss);
  if (!uncoded_jobs.ok() || !coded_jobs.ok()) {
    std::fprintf(stderr, "tailcut train: %s\n", uncoded_jobs.status().message().c_str());
    return kExitFailed;
  }

  auto exe = ExecutableDir() / "tailcut-executor";
  if (!std::filesystem::exists(exe)) {
    std::fprintf(stderr, "tailcut train: %s not found (build all targets: cmake --build build)\n", exe.c_str());
    return kExitUsage;
  }
  SetLogLevel(LogLevel::kWarn);
  LocalClusterOptions lo;
  lo.name = "train";
  lo.executor_binary = exe.string();
  lo.server.core = core_options;
  auto started = LocalCluster::Start(lo, std::move(chain).value());
  if (!started.ok()) {
    std::fprintf(stderr, "tailcut train: %s\n", started.status().message().c_str());
    return kExitFailed;
  }
  std::unique_ptr<LocalCluster> cluster = std::move(started).value();  // reset() stops it
  for (int i = 1; i <= n; ++i) {
    LocalExecutorSpec e;
    e.flags = {"--slots", "1", "--threads", "1", "--name", "train-" + std::to_string(i), "--log-level", "warn"};
    if (i == n) e.flags.insert(e.flags.end(), {"--slowdown", std::to_string(slowdown)});
    (void)cluster->AddExecutor(e);
  }
  if (Status s = cluster->WaitForExecutors(n, 15); !s.ok()) {
    std::fprintf(stderr, "tailcut train: %s\n", s.message().c_str());
    cluster.reset();
    return kExitFailed;
  }

  Client client(cluster->client_options());
  uint64_t straggler_id = 0;
  int gpus = 0;
  if (auto list = client.Executors(); list.ok()) {
    for (auto& e : *list) {
      if (e.name() == "train-" + std::to_string(n)) straggler_id = e.executor_id();
      gpus += static_cast<int>(e.gpus());
    }
  }
  if (gpu && gpus == 0) {
    std::fprintf(stderr, "tailcut train: --gpu but no executor advertises a GPU (see docs/GPU.md)\n");
    cluster.reset();
    return kExitFailed;
  }

  // One run of gradient descent from w = 0; round 0 is a warm-up (connections,
  // first allocations) and not timed. `make` builds round `it`'s job for w,
  // `decode` turns its committed outputs into the full gradient.
  using MakeRound = std::function<wire::JobSpec(const std::vector<double>& w, int it)>;
  using DecodeRound = std::function<StatusOr<std::vector<double>>(const std::vector<CommittedOutput>&)>;
  auto run = [&](const MakeRound& make, const DecodeRound& decode, const char* name, RunStats* out) -> Status {
    std::vector<double> w(static_cast<size_t>(dim), 0.0);
    for (int it = 0; it <= iters; ++it) {
      auto t0 = std::chrono::steady_clock::now();
      wire::JobSpec spec = make(w, it);
      auto id = client.Submit(spec);
      if (!id.ok()) return id.status();
      std::vector<CommittedOutput> outputs;
      bool straggler = false;
      WaitOptions wo;
      wo.on_result = [&](const wire::TaskResult& r) {
        // stream_results and Wait's watch may both deliver a result: keep one.
        for (const auto& o : outputs)
          if (o.task == r.task_index()) return;
        outputs.push_back(CommittedOutput{r.task_index(), r.attempt_id(), r.executor_id(), r.run_s(), r.output()});
        if (it > 0) (r.executor_id() == straggler_id ? out->straggler_task_s : out->task_s).push_back(r.run_s());
        straggler |= r.executor_id() == straggler_id;
      };
      auto st = client.Wait(*id, wo);
      if (!st.ok()) return st.status();
      if (st->state() != wire::JOB_SUCCEEDED) return Status::Internal(std::string(name) + ": round failed: " + st->reason());
      // Decode in task order: the same outputs always sum in the same order.
      std::sort(outputs.begin(), outputs.end(),
                [](const CommittedOutput& a, const CommittedOutput& b) { return a.task < b.task; });
      auto g = decode(outputs);
      if (!g.ok()) return g.status();
      for (int j = 0; j < dim; ++j) w[j] -= lr * (*g)[j] / total_rows;
      if (it == 0) continue;  // warm-up: the step counts, the time does not
      out->iter_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      out->used_straggler += straggler;
    }
    out->loss = TotalLoss(loss, parts, w, total_rows);
    return Status::Ok();
  };
  auto code_round = [&](const coded::GradientRoundJobs& jobs, const char* name) -> MakeRound {
    return [&jobs, name, gpu](const std::vector<double>& w, int it) {
      return ToWire(jobs.Round(w, std::string(name) + "-" + std::to_string(it)), gpu);
    };
  };
  auto code_decode = [](const coding::GradientCode& code) -> DecodeRound {
    return [&code](const std::vector<CommittedOutput>& o) { return coded::DecodeGradientRound(code, o); };
  };
  // Speed shares: every task's output is the plain gradient of its rows.
  const std::string share_prefix = coded::ShareGradientPrefix(parts, loss);
  MakeRound share_round = [&](const std::vector<double>& w, int it) {
    return SpeedShareRound(share_prefix, w, n, rows, static_cast<uint64_t>(n) * rows, gpu,
                           "speed-" + std::to_string(it));
  };
  DecodeRound share_decode = [&](const std::vector<CommittedOutput>& outs) -> StatusOr<std::vector<double>> {
    // Every share is part of the total: a missing one is an error, not a smaller gradient.
    if (static_cast<int>(outs.size()) != n)
      return Status::Internal("speed shares: " + std::to_string(outs.size()) + " of " + std::to_string(n) +
                              " shares returned");
    std::vector<double> g(static_cast<size_t>(dim), 0.0);
    for (const CommittedOutput& o : outs) {
      auto v = coded::DecodeVector(o.output);
      if (!v.ok()) return v.status();
      if (static_cast<int>(v->size()) != dim) return Status::Internal("speed shares: a gradient of the wrong length");
      for (int j = 0; j < dim; ++j) g[j] += (*v)[j];
    }
    return g;
  };

  const double initial_loss = TotalLoss(loss, parts, std::vector<double>(static_cast<size_t>(dim), 0.0), total_rows);
  if (!json)
    std::printf("tailcut train: %s regression, %d workers x %d rows x %d features, %d iterations (+1 warm-up), "
                "executor train-%d is a %.0fx straggler%s; placement %s, policies %s\n",
                model.c_str(), n, rows, dim, iters, n, slowdown, gpu ? ", tasks on GPUs" : "", placement.c_str(),
                policy.c_str());
  RunStats uncoded, coded, shares;
  Status st = run(code_round(*uncoded_jobs, "uncoded"), code_decode(*uncoded_code), "uncoded", &uncoded);
  if (st.ok()) st = run(code_round(*coded_jobs, "coded"), code_decode(*coded_code), "coded", &coded);
  if (st.ok()) st = run(share_round, share_decode, "speed shares", &shares);
  cluster.reset();
  if (!st.ok()) {
    std::fprintf(stderr, "tailcut train: %s\n", st.message().c_str());
    return kExitFailed;
  }

  auto rel_to_uncoded = [&](const RunStats& r) {
    return std::abs(r.loss - uncoded.loss) / std::max(std::abs(uncoded.loss), 1e-300);
  };
  const double rel = rel_to_uncoded(coded), rel_shares = rel_to_uncoded(shares);
  const double speedup = Mean(uncoded.iter_s) / std::max(Mean(coded.iter_s), 1e-12);
  const double share_speedup = Mean(uncoded.iter_s) / std::max(Mean(shares.iter_s), 1e-12);
  const bool losses_agree = rel < 1e-6 && rel_shares < 1e-6;
  const bool faster = speedup > 1.0;
  const std::string code_name = std::string(code_kind == "cyclic" ? "cyclic" : "fractional") + " repetition";
  if (json) {
    auto stats = [](const RunStats& r) {
      char buf[384];
      std::snprintf(buf, sizeof buf,
                    "{\"mean_s\": %.6f, \"p50_s\": %.6f, \"p99_s\": %.6f, \"final_loss\": %.17g, "
                    "\"straggler_waits\": %d, \"task_p50_s\": %.6f, \"task_max_s\": %.6f, "
                    "\"straggler_task_p50_s\": %.6f}",
                    Mean(r.iter_s), QuantileOf(r.iter_s, 0.5), QuantileOf(r.iter_s, 0.99), r.loss, r.used_straggler,
                    QuantileOf(r.task_s, 0.5), QuantileOf(r.task_s, 1.0), QuantileOf(r.straggler_task_s, 0.5));
      return std::string(buf);
    };
    std::printf("{\"model\": \"%s\", \"workers\": %d, \"stragglers\": %d, \"code\": \"%s\", \"iterations\": %d, "
                "\"slowdown\": %g, \"gpu\": %s, \"placement\": \"%s\", \"policies\": \"%s\", "
                "\"initial_loss\": %.17g, \"uncoded\": %s, \"coded\": %s, "
                "\"speed_shares\": %s, \"loss_rel_diff\": %.3e, \"shares_loss_rel_diff\": %.3e, "
                "\"speedup\": %.3f, \"shares_speedup\": %.3f, \"losses_agree\": %s, \"coded_faster\": %s}\n",
                model.c_str(), n, s, code_name.c_str(), iters, slowdown, gpu ? "true" : "false", placement.c_str(),
                policy.c_str(), initial_loss,
                stats(uncoded).c_str(), stats(coded).c_str(), stats(shares).c_str(), rel, rel_shares, speedup,
                share_speedup, losses_agree ? "true" : "false", faster ? "true" : "false");
  } else {
    std::printf("\n%-28s %9s %9s %9s %20s %16s %12s %12s\n", "RUN", "mean(ms)", "p50(ms)", "p99(ms)", "final loss",
                "waited-straggler", "task p50(ms)", "slow p50(ms)");
    auto row = [&](const std::string& label, const RunStats& r) {
      std::printf("%-28s %9.1f %9.1f %9.1f %20.12g %10d/%-5d %12.1f %12.1f\n", label.c_str(), Mean(r.iter_s) * 1e3,
                  QuantileOf(r.iter_s, 0.5) * 1e3, QuantileOf(r.iter_s, 0.99) * 1e3, r.loss, r.used_straggler, iters,
                  QuantileOf(r.task_s, 0.5) * 1e3, QuantileOf(r.straggler_task_s, 0.5) * 1e3);
    };
    row("uncoded (all " + std::to_string(n) + ")", uncoded);
    row("coded " + code_name.substr(0, code_name.find(' ')) + " (any " + std::to_string(n - s) + " of " +
            std::to_string(n) + ")",
        coded);
    row("speed shares (all " + std::to_string(n) + ")", shares);
    std::printf("\ninitial loss %.12g; final loss relative difference to uncoded: coded %.3e, speed shares %.3e "
                "(%s 1e-6)\n",
                initial_loss, rel, rel_shares, losses_agree ? "<" : ">=");
    std::printf("speedup per iteration over uncoded: coded %.2fx%s, speed shares %.2fx\n", speedup,
                faster ? "" : " (coding was NOT faster)", share_speedup);
  }
  return losses_agree ? kExitOk : kExitFailed;
}

}  // namespace tailcut::cli
