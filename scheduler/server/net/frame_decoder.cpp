#include "frame_decoder.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace tailcut {

FrameDecoder::FrameDecoder(Options options, DecodeFn decode) : opt_(options), decode_(std::move(decode)) {
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  thread_ = std::thread([this] { Work(); });
}

FrameDecoder::~FrameDecoder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
  close(event_fd_);
}

bool FrameDecoder::Wants(int source, const std::string& route, size_t bytes) const {
  return bytes >= opt_.off_loop_from || in_flight_.count({source, route}) > 0;
}

void FrameDecoder::Push(Item item) {
  ++in_flight_[{item.source, item.route}];
  queued_bytes_ += item.frame.size();
  ++pushed_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    todo_.push_back(std::move(item));
  }
  work_.notify_one();
}

std::vector<FrameDecoder::Item> FrameDecoder::Done() {
  uint64_t ignored = 0;
  (void)!read(event_fd_, &ignored, sizeof ignored);  // nonblocking: clears the counter
  std::vector<Item> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(done_);
  }
  for (Item& item : out) {
    auto it = in_flight_.find({item.source, item.route});
    if (it != in_flight_.end() && --it->second == 0) in_flight_.erase(it);
    queued_bytes_ -= std::min<uint64_t>(queued_bytes_, item.frame.size());
  }
  decoded_ += out.size();
  returned_ += out.size();
  return out;
}

std::vector<FrameDecoder::Item> FrameDecoder::Finish() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return todo_.empty() && returned_ + done_.size() == pushed_; });
  }
  return Done();
}

void FrameDecoder::Dispose(Item item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    trash_.push_back(std::move(item));
  }
  work_.notify_one();
}

void FrameDecoder::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !todo_.empty() || !trash_.empty(); });
    if (stop_) {  // what is left is freed undecoded
      todo_.clear();
      trash_.clear();
      return;
    }
    if (!trash_.empty()) {
      Item gone = std::move(trash_.front());
      trash_.pop_front();
      lock.unlock();
      gone = Item{};  // its message and frame are freed here, off the loop
      lock.lock();
      continue;
    }
    Item item = std::move(todo_.front());
    todo_.pop_front();
    lock.unlock();
    decode_(item);
    lock.lock();
    done_.push_back(std::move(item));
    const uint64_t one = 1;
    (void)!write(event_fd_, &one, sizeof one);
    idle_.notify_all();
  }
}

}  // namespace tailcut
