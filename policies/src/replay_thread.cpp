#include "tailcut/policies/replay_thread.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <exception>

#include "tailcut/common/log.h"

namespace tailcut {

struct ReplayThread::Slot {
  ReplayModel model;
  std::vector<std::string> candidates;
  bool done = false;  // under the thread's mutex
  std::vector<ReplayScore> scores;
};

// Start hands the model to the thread and returns; Poll takes the scores
// once the thread has them. One replay per engine at a time.
class ThreadedReplayEngine final : public ReplayEngine {
 public:
  explicit ThreadedReplayEngine(std::shared_ptr<ReplayThread> t) : thread_(std::move(t)) {}
  bool Start(const ReplayModel& m, const std::vector<std::string>& candidates) override {
    if (current_) return false;
    auto s = std::make_shared<ReplayThread::Slot>();
    s->model = m;
    s->candidates = candidates;
    if (!thread_->Enqueue(s)) return false;
    current_ = std::move(s);
    return true;
  }
  bool Poll(std::vector<ReplayScore>* out) override {
    if (!current_) return false;
    {
      std::lock_guard<std::mutex> l(thread_->mu_);
      if (!current_->done) return false;
      *out = std::move(current_->scores);
    }
    current_.reset();
    return true;
  }

 private:
  std::shared_ptr<ReplayThread> thread_;
  std::shared_ptr<ReplayThread::Slot> current_;  // in flight or finished, not yet polled
};

ReplayThread::ReplayThread(std::function<std::unique_ptr<ReplayEngine>()> make, ReplayThreadOptions o)
    : make_(std::move(make)), o_(o) {}

std::shared_ptr<ReplayThread> ReplayThread::Create(std::function<std::unique_ptr<ReplayEngine>()> make,
                                                   ReplayThreadOptions o) {
  return std::shared_ptr<ReplayThread>(new ReplayThread(std::move(make), o));
}

ReplayThread::~ReplayThread() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<ReplayEngine> ReplayThread::NewEngine() {
  return std::make_unique<ThreadedReplayEngine>(shared_from_this());
}

uint64_t ReplayThread::finished() const {
  std::lock_guard<std::mutex> l(mu_);
  return finished_;
}

size_t ReplayThread::pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size() + (running_ ? 1 : 0);
}

bool ReplayThread::Enqueue(std::shared_ptr<Slot> s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_ || queue_.size() >= o_.max_queued) return false;
    queue_.push_back(std::move(s));
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  cv_.notify_one();
  return true;
}

void ReplayThread::Run() {
  // Linux: nice is per thread; the scheduler's own threads keep theirs.
  if (o_.nice > 0 && setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), o_.nice) != 0)
    LogLine(LogLevel::kWarn, "default: replay thread keeps the scheduler's priority (setpriority failed)");
  std::unique_ptr<ReplayEngine> engine;
  try {
    engine = make_();
  } catch (const std::exception& e) {
    LogLine(LogLevel::kError, std::string("default: no replay engine: ") + e.what());
  }
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::shared_ptr<Slot> s = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    l.unlock();
    std::vector<ReplayScore> scores;
    // A failed replay answers no scores: the selector keeps its choice.
    try {
      if (engine && engine->Start(s->model, s->candidates))
        while (!engine->Poll(&scores)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } catch (const std::exception& e) {
      LogLine(LogLevel::kWarn, std::string("default: replay failed: ") + e.what());
      scores.clear();
    }
    s->model = ReplayModel();  // its run times: no longer needed
    l.lock();
    s->scores = std::move(scores);
    s->done = true;
    running_ = false;
    finished_++;
  }
}

PolicyServices ThreadedReplayServices(std::function<std::unique_ptr<ReplayEngine>()> make, ReplayThreadOptions o) {
  std::shared_ptr<ReplayThread> t = ReplayThread::Create(std::move(make), o);
  PolicyServices s;
  s.replay = [t] { return t->NewEngine(); };
  return s;
}

}  // namespace tailcut
