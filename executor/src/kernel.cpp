// KernelRegistry, KernelContext and CancelToken.
#include "tailcut/executor/kernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <boost/fiber/operations.hpp>

namespace tailcut::executor {

struct CancelToken::Waiters {
  boost::fibers::mutex mu;
  boost::fibers::condition_variable cv;
};

CancelToken::CancelToken() : waiters_(std::make_unique<Waiters>()) {}
CancelToken::~CancelToken() = default;

void CancelToken::Cancel() {
  {
    std::unique_lock<boost::fibers::mutex> lock(waiters_->mu);
    cancelled_.store(true, std::memory_order_release);
  }
  waiters_->cv.notify_all();
}

// Longer sleeps wait this long instead: the steady clock counts int64
// nanoseconds (~292 years), and converting inf or 1e300 s to it is undefined.
constexpr double kMaxSleepS = 1e9;

bool CancelToken::SleepFor(double seconds) {
  if (!(seconds > 0)) return !cancelled();  // NaN too
  seconds = std::min(seconds, kMaxSleepS);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(seconds));
  std::unique_lock<boost::fibers::mutex> lock(waiters_->mu);
  // wait_until returns the predicate: true means cancelled.
  return !waiters_->cv.wait_until(lock, deadline, [this] { return cancelled(); });
}

void KernelContext::ReportProgress(float fraction) {
  if (std::isnan(fraction)) return;  // a python function's, say: not a fraction, and clamp would keep it
  progress_.store(std::clamp(fraction, 0.0f, 1.0f), std::memory_order_relaxed);
}

bool KernelContext::SleepFor(double seconds) { return cancel_->SleepFor(seconds * time_factor_); }

void KernelContext::Yield() { boost::this_fiber::yield(); }

std::vector<std::string> TaskEnvironment(const KernelContext& ctx) {
  const KernelIdentity& id = ctx.identity();
  std::vector<std::string> env = {
      "TAILCUT_JOB_ID=" + std::to_string(id.job_id),
      "TAILCUT_TASK_INDEX=" + std::to_string(id.task_index),
      "TAILCUT_TASK_COUNT=" + std::to_string(id.task_count),
      "TAILCUT_ATTEMPT_ID=" + std::to_string(id.attempt_id),
      std::string("TAILCUT_IS_COPY=") + (id.is_copy ? "1" : "0"),
  };
  if (const KernelShare& sh = ctx.share(); sh.divisible()) {
    env.push_back("TAILCUT_SHARE_OFFSET=" + std::to_string(sh.begin));
    env.push_back("TAILCUT_SHARE_SIZE=" + std::to_string(sh.count));
    env.push_back("TAILCUT_SHARE_TOTAL=" + std::to_string(sh.total));
  }
  // The attempt's private output directory (docs/JOBS.md, "Output directories").
  if (!ctx.output_dir().empty()) env.push_back("TAILCUT_OUTPUT_DIR=" + ctx.output_dir());
  if (ctx.gpus() > 0) {
    // gpu_devices() counts the devices this process sees: under an
    // executor started with CUDA_VISIBLE_DEVICES=2,3, device 1 is "3".
    std::vector<std::string> visible;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
      for (std::string_view list(v); !list.empty();) {
        size_t comma = list.find(',');
        visible.emplace_back(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      }
    }
    std::string devices;
    for (int d : ctx.gpu_devices()) {
      bool mapped = !visible.empty() && d >= 0 && static_cast<size_t>(d) < visible.size();
      devices += (devices.empty() ? "" : ",") + (mapped ? visible[static_cast<size_t>(d)] : std::to_string(d));
    }
    env.push_back("CUDA_VISIBLE_DEVICES=" + devices);
  }
  return env;
}

Status WriteTaskInputs(const KernelContext& ctx, const std::string& dir, std::vector<std::string>* env) {
  const std::vector<KernelInput>& in = ctx.inputs();
  if (in.empty()) return Status::Ok();
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create input folder " + dir + ": " + ec.message());
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    return f ? Status::Ok() : Status::IoError("cannot write input file " + dir + "/" + name);
  };
  std::string paths;
  for (size_t i = 0; i < in.size(); ++i) {
    if (Status s = write(std::to_string(i), in[i].output); !s.ok()) return s;
    paths += in[i].path + "\n";
  }
  if (Status s = write("paths", paths); !s.ok()) return s;
  env->push_back("TAILCUT_INPUT_DIR=" + dir);
  env->push_back("TAILCUT_INPUT_COUNT=" + std::to_string(in.size()));
  return Status::Ok();
}

Status KernelRegistry::Register(std::string name, KernelFn fn, KernelTraits traits) {
  return Register(std::move(name), std::move(fn), nullptr, traits);
}

Status KernelRegistry::Register(std::string name, KernelFn fn, KernelBatchFn batch, KernelTraits traits) {
  if (name.empty()) return Status::InvalidArgument("kernel name must not be empty");
  if (!fn) return Status::InvalidArgument("kernel '" + name + "' has no function");
  if (kernels_.count(name)) return Status::InvalidArgument("kernel '" + name + "' is already registered");
  kernels_.emplace(std::move(name), Kernel{std::move(fn), traits, std::move(batch)});
  return Status::Ok();
}

Status KernelRegistry::Restrict(const std::vector<std::string>& allowed) {
  std::string unknown;
  for (const std::string& name : allowed)
    if (!kernels_.count(name) && !disabled_.count(name)) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
  if (!unknown.empty()) {
    std::map<std::string, Kernel, std::less<>> all = kernels_;
    all.insert(disabled_.begin(), disabled_.end());
    std::string known;
    for (const auto& [name, k] : all) known += (known.empty() ? "" : ", ") + name;
    return Status::InvalidArgument("unknown kernel(s) " + unknown + " (known: " + known + ")");
  }
  kernels_.merge(disabled_);
  for (auto it = kernels_.begin(); it != kernels_.end();) {
    if (std::find(allowed.begin(), allowed.end(), it->first) != allowed.end()) {
      ++it;
    } else {
      auto next = std::next(it);
      disabled_.insert(kernels_.extract(it));
      it = next;
    }
  }
  return Status::Ok();
}

std::string KernelRegistry::MissingReason(std::string_view name) const {
  const std::string quoted = "'" + std::string(name) + "'";
  if (disabled_.count(name))
    return "kernel " + quoted + " is not enabled on this executor (" +
           (name == "shell"    ? "start it with --allow-shell"
            : name == "exec"   ? "start it with --allow-exec and an exec_allow list"
            : name == "python" ? "start it with --allow-python: a pickled function is code, docs/SECURITY.md"
                               : "not in its allow_kernels") +
           ")";
  return "unknown kernel " + quoted + " (this executor offers: " + NamesList() + ")";
}

std::vector<std::string> DefaultAllowedKernels() {
  std::vector<std::string> names = BuiltinKernels().Names();
  std::erase(names, "shell");
  std::erase(names, "exec");
  return names;
}

const Kernel* KernelRegistry::Find(std::string_view name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::Names() const {
  std::vector<std::string> out;
  out.reserve(kernels_.size());
  for (const auto& [name, k] : kernels_) out.push_back(name);
  return out;
}

std::string KernelRegistry::NamesList() const {
  std::string out;
  for (const auto& [name, k] : kernels_) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace tailcut::executor
