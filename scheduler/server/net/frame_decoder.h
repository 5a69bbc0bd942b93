// Large frames are decoded off the loop (issue 43, docs/LIMITS.md,
// "Decoding off the loop"). Parsing a 16 MiB frame of millions of empty
// messages takes the better part of a second, and freeing what it built
// as long; on the loop's thread that is a second in which no other peer's
// heartbeat is read. A frame of at least `off_loop_from` bytes is parsed
// here, on a thread of its own, and handed back to the loop when done;
// the loop frees it here again.
//
// Order: once a peer (a socket and a routing id) has a frame here, every
// later frame of that peer goes through here too, so each peer's frames are
// handled in the order it sent them (one thread, first in first out).
// Bound: at most `max_queued_bytes` of frames wait or decode at once (one
// larger frame when nothing else does); the loop stops reading a socket
// whose next frame does not fit (HasRoom) until there is room, so the
// rest waits in ZeroMQ's queues and the peers' TCP buffers.
//
// The loop's thread calls everything but `decode`, which runs on the
// decoder's thread and may touch only the item and what never changes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <google/protobuf/arena.h>
#include <google/protobuf/message_lite.h>
#include <zmq.hpp>

namespace tailcut {

// Deletes a message unless an arena owns it (then the message is not
// touched: its arena may be gone already, e.g. in a move assignment).
struct DeleteUnlessOnArena {
  bool on_arena = false;
  void operator()(google::protobuf::MessageLite* m) const {
    if (!on_arena) delete m;
  }
};

class FrameDecoder {
 public:
  struct Options {
    size_t off_loop_from = 64u << 10;     // frames at least this large are decoded here
    size_t max_queued_bytes = 64u << 20;  // frames waiting or decoding here, in bytes
  };
  struct Item {
    int source = 0;  // the caller's name for the socket it came from
    std::string route;
    zmq::message_t frame;  // kept: its metadata names the peer's key
    // Where `msg` is parsed, if anywhere but the heap (declared first: it
    // outlives the message). A large Report parsed on the heap was an
    // allocation per result and per start, and as many frees (issue 41).
    std::unique_ptr<google::protobuf::Arena> arena;
    std::unique_ptr<google::protobuf::MessageLite, DeleteUnlessOnArena> msg;  // an empty message of the frame's type
    bool parsed = false;                                 // set by `decode`
    uint64_t tasks = 0, request_id = 0;                  // what `decode` read before parsing, if anything
  };
  using DecodeFn = std::function<void(Item&)>;

  FrameDecoder(Options options, DecodeFn decode);
  ~FrameDecoder();  // frees what is left, joins the thread
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  // Readable (poll it) when Done() has items.
  int fd() const { return event_fd_; }
  // Whether a frame of `bytes` from `route` on `source` goes here: it is
  // large, or that peer has frames here already.
  bool Wants(int source, const std::string& route, size_t bytes) const;
  bool HasRoom(size_t bytes) const { return queued_bytes_ == 0 || queued_bytes_ + bytes <= opt_.max_queued_bytes; }
  void Push(Item item);
  // The items decoded since the last call, in the order they were pushed.
  std::vector<Item> Done();
  // Waits until everything pushed is decoded (shutdown), then Done().
  std::vector<Item> Finish();
  // Frees an item's message and frame on the decoder's thread.
  void Dispose(Item item);

  uint64_t decoded() const { return decoded_; }            // frames decoded here so far
  uint64_t queued_bytes() const { return queued_bytes_; }  // bytes here now

 private:
  void Work();

  const Options opt_;
  const DecodeFn decode_;
  int event_fd_ = -1;
  // Loop thread only.
  std::map<std::pair<int, std::string>, uint32_t> in_flight_;  // per peer: its frames here
  uint64_t queued_bytes_ = 0, decoded_ = 0, pushed_ = 0, returned_ = 0;
  // Shared with the decoder's thread.
  std::mutex mu_;
  std::condition_variable work_, idle_;
  std::deque<Item> todo_;   // to decode
  std::deque<Item> trash_;  // to free
  std::vector<Item> done_;  // decoded, for the loop
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tailcut
