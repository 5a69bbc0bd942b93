// Large frames decoded off the loop (server_impl.h, frame_decoder.h;
// docs/LIMITS.md, "Decoding off the loop"): a frame of at least
// scheduler.decode_off_loop_bytes, and every later frame of the same peer
// until those are handled, is parsed on the decoder's thread; the loop
// meanwhile reads every other peer's heartbeats and requests.
#include <time.h>

#include <algorithm>

#include "server_impl.h"
#include "tailcut/wire/wire.h"

namespace tailcut {

bool SchedulerServer::Impl::Defer(Source source, const std::string& route, zmq::message_t& payload) {
  if (!decoder_->Wants(source, route, payload.size())) return false;
  FrameDecoder::Item item;
  item.source = source;
  item.route = route;
  item.frame = std::move(payload);
  if (source == kFromExecutors) {
    // On an arena, as on the loop (DrainExecutors): blocks of about the
    // frame's size, freed at once when the decoder disposes of the item.
    google::protobuf::ArenaOptions o;
    o.start_block_size = std::clamp<size_t>(item.frame.size(), 4096, size_t{16} << 20);
    o.max_block_size = std::max<size_t>(o.start_block_size, size_t{1} << 20);
    item.arena = std::make_unique<google::protobuf::Arena>(o);
    item.msg = {google::protobuf::Arena::CreateMessage<wire::ExecutorMessage>(item.arena.get()),
                DeleteUnlessOnArena{true}};
  } else {
    item.msg.reset(new wire::ClientRequest());
  }
  if (decoder_->HasRoom(item.frame.size())) {
    decoder_->Push(std::move(item));
  } else {  // the socket is read again when this fits (OnDecoded)
    ++decode_waits_;
    waiting_[source] = std::move(item);
  }
  return true;
}

void SchedulerServer::Impl::OnDecoded(std::vector<FrameDecoder::Item> items) {
  for (FrameDecoder::Item& item : items) {
    if (item.source == kFromExecutors) {
      OnExecutorFrame(item.route, item.frame, item.parsed, static_cast<wire::ExecutorMessage&>(*item.msg));
    } else if (AdmitFrame(item.route, item.tasks, item.request_id)) {
      OnClientFrame(item.route, item.frame, item.parsed, static_cast<wire::ClientRequest&>(*item.msg));
    }
    decoder_->Dispose(std::move(item));  // freeing millions of messages is a stall too
  }
  for (std::optional<FrameDecoder::Item>& w : waiting_) {
    if (!w || !decoder_->HasRoom(w->frame.size())) continue;
    decoder_->Push(std::move(*w));
    w.reset();
  }
}

void SchedulerServer::Impl::SettleDecodes() {
  do OnDecoded(decoder_->Finish());
  while (waiting_[kFromExecutors] || waiting_[kFromClients]);
}

void SchedulerServer::Impl::NoteTurn() {
  if (!metrics_) return;  // one clock read a turn, only for /metrics
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const double cpu = static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  if (turn_cpu_ > 0) metrics_->OnLoopTurn(cpu - turn_cpu_);
  turn_cpu_ = cpu;
}

}  // namespace tailcut
