#include "python_worker.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "child_run.h"

namespace tailcut::executor::python {
namespace {

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);  // a dead worker is an error, not SIGPIPE
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

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
  shutdown(fd_, SHUT_RDWR);  // wakes the reader even if a grandchild holds the other end
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

bool Worker::SendRaw(std::string_view frames) { return WriteAll(fd_, frames.data(), frames.size()); }

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
  return f;
}

bool Worker::dead() {
  std::unique_lock<boost::fibers::mutex> lock(mu_);
  return eof_ && frames_.empty();
}

std::string Worker::Ending() {
  Reap();
  return "python worker (pid " + std::to_string(pid_) + ") " + DescribeExit(wait_status_);
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
    {
      std::unique_lock<boost::fibers::mutex> lock(mu_);
      for (Frame& f : got) frames_.push_back(std::move(f));
    }
    cv_.notify_all();
  }
  {
    std::unique_lock<boost::fibers::mutex> lock(mu_);
    eof_ = true;
  }
  cv_.notify_all();
}

}  // namespace tailcut::executor::python
