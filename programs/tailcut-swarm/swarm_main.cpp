// tailcut-swarm: thousands of hollow executors (hollow.h) in a few
// processes, and optionally the driver that measures a scheduler against
// them: idle CPU, no-op dispatch rate, fan-out latency (docs/benchmarks/dispatch.md,
// "Fleet scale"). The swarm's own CPU is reported beside the scheduler's so
// the one is not mistaken for the other.
//
//   tailcut-swarm --scheduler tcp://127.0.0.1:7700 --executors 10000 --slots 4
//       --client tcp://127.0.0.1:7701 --scheduler-pid PID --idle-s 10 --noop-tasks 1000000
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hollow.h"
#include "tailcut/client/client.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/log.h"

namespace {

using tailcut::swarm::HollowGroup;
using tailcut::swarm::HollowOptions;
using tailcut::swarm::HollowStats;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

constexpr const char* kUsage = R"(usage: tailcut-swarm --executors N [options]
hollow executors:
  --scheduler EP          the scheduler's executor endpoint (tcp://127.0.0.1:7700)
  --executors N           how many (required)
  --slots S               slots each (1)
  --memory-mb M           memory each advertises, MiB (0: does not say)
  --gpus G                GPUs each advertises (0)
  --processes P           processes (1; each holds N/P executors: two file
                          descriptors per executor count against ulimit -n)
  --threads T             threads per process (2)
  --jitter SIGMA          lognormal jitter of run times (0: exactly ms=)
  --fail-slow-fraction F  this fraction of executors runs --fail-slow-factor
                          times slower (0)
  --fail-slow-factor X    (10)
  --key-file K --scheduler-key PUB   CURVE keys (docs/SECURITY.md)
  --seed N                (1)
  --name-prefix P         executors are named P-INDEX (hollow)
  --duration-s S          without --client: stop after S s (0: at SIGINT/SIGTERM)
driver (with --client):
  --client EP             the scheduler's client endpoint; waits for all N to register
  --wait-executors M      ... or for M executors (real daemons beside the swarm)
  --client-key-file K     the client's key (with --scheduler-key)
  --scheduler-pid PID     measure that process's CPU
  --idle-s S              measure idle CPU for S s first (0)
  --noop-tasks N          then a no-op job of N tasks (repeatable)
  --fanout J:K:MS         then J fan-out jobs of K tasks sleeping MS ms, one at a time
)";

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// utime + stime of a process, in seconds; -1 when it cannot be read.
double ProcCpuS(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return -1;
  auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double ut = 0, st = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) ut = std::atof(field.c_str());
    if (i == 15) st = std::atof(field.c_str());
  }
  return (ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuS(int who) {
  rusage u{};
  getrusage(who, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

struct Args {
  std::map<std::string, std::vector<std::string>> v;
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = v.find(k);
    return it == v.end() ? def : it->second.back();
  }
  double Num(const std::string& k, double def) const {
    std::string s = Get(k);
    if (s.empty()) return def;
    char* end = nullptr;
    double x = std::strtod(s.c_str(), &end);
    if (*end != '\0' || x < 0) {
      std::cerr << "tailcut-swarm: " << k << " wants a number >= 0, got '" << s << "'\n";
      std::exit(2);
    }
    return x;
  }
};

// One process's share: `count` executors from `first` on `threads` threads.
int RunChild(const HollowOptions& o, uint32_t first, uint32_t count, uint32_t threads, double duration_s) {
  zmq::context_t ctx(std::max<int>(1, static_cast<int>(threads)));
  // With keys each session also watches its handshake (two more sockets).
  ctx.set(zmq::ctxopt::max_sockets, static_cast<int>(count * (o.keys.key_file.empty() ? 1 : 3) + 64));
  std::vector<std::unique_ptr<HollowGroup>> groups;
  threads = std::max<uint32_t>(1, std::min(threads, count));
  for (uint32_t t = 0; t < threads; ++t) {
    uint32_t lo = first + count * t / threads, hi = first + count * (t + 1) / threads;
    groups.push_back(std::make_unique<HollowGroup>(ctx, o, lo, hi - lo));
  }
  std::vector<std::thread> workers;
  for (auto& g : groups) workers.emplace_back([&g] { g->Run(g_stop); });
  double t0 = NowS();
  while (!g_stop.load() && (duration_s <= 0 || NowS() - t0 < duration_s))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  g_stop.store(true);
  for (auto& w : workers) w.join();
  HollowStats sum;
  for (auto& g : groups) {
    HollowStats s = g->Stats();
    sum.registered += s.registered;
    sum.registrations += s.registrations;
    sum.attempts += s.attempts;
    sum.results += s.results;
    sum.cancelled += s.cancelled;
    sum.reports += s.reports;
    sum.heartbeats += s.heartbeats;
    sum.received += s.received;
    sum.max_heartbeat_ms = std::max(sum.max_heartbeat_ms, s.max_heartbeat_ms);
  }
  double wall = NowS() - t0;
  std::printf(
      "swarm process %u-%u: %u executors, %lu registrations, %lu attempts, %lu results, %lu cancelled, %lu reports "
      "(%lu heartbeats), %lu messages in, heartbeat interval up to %u ms; %.2f s CPU in %.1f s\n",
      first, first + count - 1, count, sum.registrations, sum.attempts, sum.results, sum.cancelled, sum.reports,
      sum.heartbeats, sum.received, sum.max_heartbeat_ms, SelfCpuS(RUSAGE_SELF), wall);
  std::fflush(stdout);
  groups.clear();
  return 0;
}

struct CpuMeter {
  pid_t scheduler = 0;
  std::vector<pid_t> swarm;
  double t = 0, sched = 0, hollow = 0;
  void Start() {
    t = NowS();
    sched = scheduler ? ProcCpuS(scheduler) : 0;
    hollow = 0;
    for (pid_t p : swarm) hollow += ProcCpuS(p);
  }
  // "scheduler X% of a core, swarm Y%"
  std::string Stop(double* sched_pct = nullptr) {
    double wall = NowS() - t;
    double h = 0;
    for (pid_t p : swarm) h += ProcCpuS(p);
    char buf[160];
    double s = scheduler ? (ProcCpuS(scheduler) - sched) / wall * 100 : -1;
    if (sched_pct) *sched_pct = s;
    std::snprintf(buf, sizeof buf, "scheduler %.1f%% of a core, swarm %.1f%%", s, (h - hollow) / wall * 100);
    return buf;
  }
};

int Drive(const Args& a, uint32_t n, CpuMeter meter) {
  tailcut::ClientOptions co;
  co.endpoint = a.Get("--client");
  co.key_file = a.Get("--client-key-file");
  co.scheduler_key = a.Get("--client-key-file").empty() ? "" : a.Get("--scheduler-key");
  co.timeout_s = 60;
  tailcut::Client c(co);
  double t0 = NowS();
  size_t seen = 0;
  while (!g_stop.load()) {
    // The count only: the whole list of 10,000 every half second would
    // load the scheduler it is measuring.
    auto ex = c.ExecutorCount();
    if (!ex.ok()) {
      std::cerr << "tailcut-swarm: " << ex.status().message() << "\n";
      return 1;
    }
    seen = *ex;
    if (seen >= n) break;
    if (NowS() - t0 > 300) {
      std::cerr << "tailcut-swarm: only " << seen << " of " << n << " executors registered after 300 s\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::printf("registered: %zu executors in %.1f s\n", seen, NowS() - t0);
  if (double idle = a.Num("--idle-s", 0); idle > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // registration's tail settles
    meter.Start();
    std::this_thread::sleep_for(std::chrono::duration<double>(idle));
    double pct = 0;
    std::string cpu = meter.Stop(&pct);
    std::printf("idle %.0f s: %s; %.2f us of scheduler CPU per executor per second\n", idle, cpu.c_str(),
                pct / 100 * 1e6 / n);
  }
  tailcut::WaitOptions wo;
  wo.progress_interval_s = 0.05;
  auto run = [&](const tailcut::wire::JobSpec& spec) -> std::optional<tailcut::wire::JobStatus> {
    auto id = c.Submit(spec);
    if (!id.ok()) {
      std::cerr << "tailcut-swarm: submit: " << id.status().message() << "\n";
      return std::nullopt;
    }
    auto st = c.Wait(*id, wo);
    if (!st.ok()) {
      std::cerr << "tailcut-swarm: wait: " << st.status().message() << "\n";
      return std::nullopt;
    }
    return *st;
  };
  int rc = 0;
  auto noops = a.v.find("--noop-tasks");
  for (const std::string& t : noops == a.v.end() ? std::vector<std::string>{} : noops->second) {
    uint32_t tasks = static_cast<uint32_t>(std::strtoul(t.c_str(), nullptr, 10));
    meter.Start();
    auto st = run(tailcut::FanoutJob("noop", "", tasks));
    if (!st) return 1;
    std::string cpu = meter.Stop();
    double s = st->finished_at_s() - st->submitted_at_s();
    uint32_t extra = st->attempts() - std::min(st->attempts(), st->tasks());
    std::printf(
        "noop %u tasks: %s in %.3f s = %.0f tasks/s; %u attempts, %u copies, restarts+copies %u = %.3f%% of tasks; "
        "%s\n",
        tasks, tailcut::wire::JobState_Name(st->state()).c_str(), s, tasks / s, st->attempts(), st->copies(), extra,
        100.0 * extra / tasks, cpu.c_str());
    if (st->state() != tailcut::wire::JOB_SUCCEEDED) rc = 1;
  }
  if (std::string f = a.Get("--fanout"); !f.empty()) {
    unsigned jobs = 0, tasks = 0;
    double ms = 0;
    if (std::sscanf(f.c_str(), "%u:%u:%lf", &jobs, &tasks, &ms) != 3 || jobs == 0 || tasks == 0) {
      std::cerr << "tailcut-swarm: --fanout wants JOBS:TASKS:MS, got '" << f << "'\n";
      return 2;
    }
    std::vector<double> lat;
    uint64_t attempts = 0, copies = 0;
    meter.Start();
    for (unsigned j = 0; j < jobs && !g_stop.load(); ++j) {
      auto st = run(tailcut::FanoutJob("sleep", "ms=" + std::to_string(ms), tasks));
      if (!st) return 1;
      lat.push_back(st->finished_at_s() - st->submitted_at_s());
      attempts += st->attempts();
      copies += st->copies();
    }
    std::string cpu = meter.Stop();
    std::sort(lat.begin(), lat.end());
    auto q = [&](double p) { return lat[std::min(lat.size() - 1, static_cast<size_t>(p * lat.size()))]; };
    std::printf("fanout %u jobs x %u tasks of %.0f ms: job latency p50 %.3f s, p99 %.3f s, max %.3f s; "
                "%lu attempts for %lu tasks (%lu copies); %s\n",
                jobs, tasks, ms, q(0.5), q(0.99), lat.back(), attempts, uint64_t{jobs} * tasks, copies, cpu.c_str());
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::cerr << "tailcut-swarm: bad argument '" << k << "'\n" << kUsage;
      return 2;
    }
    a.v[k].push_back(argv[++i]);
  }
  static const char* known[] = {
      "--scheduler",       "--executors",     "--slots",  "--memory-mb",          "--gpus",
      "--processes",       "--threads",       "--jitter", "--fail-slow-fraction", "--fail-slow-factor",
      "--key-file",        "--scheduler-key", "--seed",   "--duration-s",         "--client",
      "--client-key-file", "--scheduler-pid", "--idle-s", "--noop-tasks",         "--fanout",
      "--wait-executors",  "--name-prefix"};
  for (auto& [k, v] : a.v)
    if (std::find_if(std::begin(known), std::end(known), [&](const char* x) { return k == x; }) == std::end(known)) {
      std::cerr << "tailcut-swarm: unknown option " << k << "\n" << kUsage;
      return 2;
    }
  uint32_t n = static_cast<uint32_t>(a.Num("--executors", 0));
  if (n == 0) {
    std::cerr << "tailcut-swarm: --executors N is required\n" << kUsage;
    return 2;
  }
  HollowOptions o;
  o.scheduler = a.Get("--scheduler", o.scheduler);
  o.keys = {a.Get("--key-file"), a.Get("--scheduler-key")};
  o.slots = std::max<uint32_t>(1, static_cast<uint32_t>(a.Num("--slots", 1)));
  o.memory_mb =
      static_cast<uint64_t>(std::clamp(a.Num("--memory-mb", 0), 0.0, static_cast<double>(tailcut::kMaxMemoryMb)));
  o.gpus = static_cast<uint32_t>(std::clamp(a.Num("--gpus", 0), 0.0, 64.0));
  o.jitter_sigma = a.Num("--jitter", 0);
  double frac = a.Num("--fail-slow-fraction", 0);
  o.fail_slow_every = frac > 0 ? static_cast<uint32_t>(std::max(1.0, std::round(1 / frac))) : 0;
  o.fail_slow_factor = a.Num("--fail-slow-factor", 10);
  o.seed = static_cast<uint64_t>(a.Num("--seed", 1));
  o.name_prefix = a.Get("--name-prefix", o.name_prefix);
  uint32_t procs = std::clamp<uint32_t>(static_cast<uint32_t>(a.Num("--processes", 1)), 1, n);
  uint32_t threads = std::max<uint32_t>(1, static_cast<uint32_t>(a.Num("--threads", 2)));
  tailcut::SetLogLevel(tailcut::LogLevel::kWarn);
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  CpuMeter meter;
  meter.scheduler = static_cast<pid_t>(a.Num("--scheduler-pid", 0));
  for (uint32_t p = 0; p < procs; ++p) {
    uint32_t lo = static_cast<uint32_t>(uint64_t{n} * p / procs), hi = static_cast<uint32_t>(uint64_t{n} * (p + 1) / procs);
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("tailcut-swarm: fork");
      return 1;
    }
    if (pid == 0) {
      try {
        _exit(RunChild(o, lo, hi - lo, threads, a.Get("--client").empty() ? a.Num("--duration-s", 0) : 0));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tailcut-swarm: %s\n", e.what());
        _exit(1);
      }
    }
    meter.swarm.push_back(pid);
  }
  int rc = 0;
  if (!a.Get("--client").empty()) {
    rc = Drive(a, static_cast<uint32_t>(a.Num("--wait-executors", n)), meter);
    for (pid_t p : meter.swarm) kill(p, SIGTERM);
  }
  for (pid_t p : meter.swarm) {
    int status = 0;
    while (waitpid(p, &status, 0) < 0 && errno == EINTR) {
      if (g_stop.load()) kill(p, SIGTERM);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = rc ? rc : 1;
  }
  std::printf("swarm total: %.2f s CPU in %u processes\n", SelfCpuS(RUSAGE_CHILDREN), procs);
  return rc;
}
