#include "python_worker.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <boost/fiber/operations.hpp>

#include "child_run.h"

namespace tailcut::executor::python {
namespace {

// Frames the worker sent that may wait for the owner (their bytes, each
// counted kFrameOverhead more): past it the reader stops reading, and the
// worker's writes block in its own process.
constexpr uint64_t kMaxQueuedBytes = 1u << 20;
constexpr uint64_t kFrameOverhead = 64;

}  // namespace

std::string DescribeExit(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "was killed by signal " + std::to_string(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  return "ended";
}

void AppendFrame(std::string* out, uint8_t type, std::string_view payload) {
  const uint32_t len = static_cast<uint32_t>(payload.size() + 1);
  out->append(reinterpret_cast<const char*>(&len), 4);  // little-endian hosts only (x86-64, arm64)
  out->push_back(static_cast<char>(type));
  out->append(payload);
}

Worker::Worker(pid_t pid, int fd, uint64_t max_frame, void* state)
    : pid_(pid), fd_(fd), max_frame_(max_frame), state_(static_cast<uint64_t*>(state)), reader_([this] {
        ReadLoop();
      }) {}

Worker::~Worker() {
  if (!reaped_) kill(pid_, SIGKILL);
  {
    std::unique_lock<boost::fibers::mutex> lock(mu_);
    stop_ = true;
  }
  room_.notify_all();        // wakes the reader waiting for room
  shutdown(fd_, SHUT_RDWR);  // wakes it in read() even if a grandchild holds the other end
  reader_.join();
  close(fd_);
  Reap();
  munmap(state_, kStateBytes);
}

bool Worker::Send(uint8_t type, std::string_view payload) {
  std::string frame;
  AppendFrame(&frame, type, payload);
  return SendRaw(frame);
}

bool Worker::SendRaw(std::string_view frames) {
  out_.append(frames);
  return Flush();
}

bool Worker::Flush() {
  while (out_at_ < out_.size()) {
    // Never blocks: a worker that does not read (its task runs, or it is
    // stuck) must not hold the owner's thread. A dead one is an error, not SIGPIPE.
    const ssize_t w = send(fd_, out_.data() + out_at_, out_.size() - out_at_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (w <= 0) {
      out_.clear();
      out_at_ = 0;
      return false;
    }
    out_at_ += static_cast<size_t>(w);
  }
  out_.clear();
  out_at_ = 0;
  return true;
}

uint64_t Worker::Started() const { return std::atomic_ref<uint64_t>(state_[0]).load(std::memory_order_acquire); }

void Worker::Interrupt(uint64_t n) {
  std::atomic_ref<uint64_t>(state_[1]).store(n, std::memory_order_release);
  kill(pid_, SIGINT);
}

std::optional<Frame> Worker::Next(double seconds) {
  std::unique_lock<boost::fibers::mutex> lock(mu_);
  auto ready = [this] { return !frames_.empty() || eof_; };
  const auto wait =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  if (!cv_.wait_for(lock, wait, ready)) return std::nullopt;
  if (frames_.empty()) return Frame{};
  Frame f = std::move(frames_.front());
  frames_.pop_front();
  queued_ -= f.payload.size() + kFrameOverhead;
  lock.unlock();
  room_.notify_all();
  return f;
}

bool Worker::dead() {
  std::unique_lock<boost::fibers::mutex> lock(mu_);
  return eof_ && frames_.empty();
}

bool Worker::talked() {
  std::unique_lock<boost::fibers::mutex> lock(mu_);
  return !frames_.empty();
}

std::string Worker::cut_off() {
  std::unique_lock<boost::fibers::mutex> lock(mu_);
  return cut_off_;
}

std::string Worker::Ending() {
  const auto t0 = Clock::now();
  const std::string cut = cut_off();
  while (!reaped_) {
    const pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      reaped_ = true;
      break;
    }
    if (!killed_ && (!cut.empty() || SecondsSince(t0) > kKillWaitS)) {  // cut off, or closed its socket and lives on
      kill(pid_, SIGKILL);
      killed_ = true;
    }
    boost::this_fiber::sleep_for(std::chrono::milliseconds(5));
  }
  const std::string who = "python worker (pid " + std::to_string(pid_) + ")";
  if (!cut.empty()) return who + " " + cut + ": killed";
  if (killed_)
    return who + " closed its socket but did not exit within " + std::to_string(int(kKillWaitS)) + " s: killed";
  return who + " " + DescribeExit(wait_status_);
}

uint64_t Worker::RssBytes() const { return ResidentBytes(static_cast<int>(pid_)); }

void Worker::Reap() {
  if (reaped_) return;
  while (waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {}
  reaped_ = true;
}

void Worker::ReadLoop() {
  std::string buf;
  size_t used = 0;  // bytes of buf already parsed
  char chunk[65536];
  for (bool ok = true; ok;) {
    ssize_t r = read(fd_, chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    buf.append(chunk, static_cast<size_t>(r));
    std::deque<Frame> got;
    while (buf.size() - used >= 4) {
      uint32_t len = 0;
      std::memcpy(&len, buf.data() + used, 4);
      if (len == 0 || len > max_frame_) {
        std::unique_lock<boost::fibers::mutex> lock(mu_);
        cut_off_ = "sent a frame of " + std::to_string(len) + " bytes (the limit: " + std::to_string(max_frame_) + ")";
        ok = false;
        break;
      }
      if (buf.size() - used - 4 < len) break;
      Frame f;
      f.type = static_cast<uint8_t>(buf[used + 4]);
      f.payload.assign(buf, used + 5, len - 1);
      got.push_back(std::move(f));
      used += 4 + len;
    }
    buf.erase(0, used);
    used = 0;
    if (got.empty()) continue;
    std::unique_lock<boost::fibers::mutex> lock(mu_);
    for (Frame& f : got) {
      queued_ += f.payload.size() + kFrameOverhead;
      frames_.push_back(std::move(f));
    }
    lock.unlock();
    cv_.notify_all();
    lock.lock();
    room_.wait(lock, [this] { return queued_ <= kMaxQueuedBytes || stop_; });
    if (stop_) break;
  }
  {
    std::unique_lock<boost::fibers::mutex> lock(mu_);
    eof_ = true;
  }
  cv_.notify_all();
}

}  // namespace tailcut::executor::python
