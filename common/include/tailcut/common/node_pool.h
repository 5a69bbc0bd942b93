// A memory resource for the nodes of one container (std::pmr): blocks of
// each small size are carved from 64 KiB chunks and, once freed, kept in a
// free list of their size for the next node. The scheduler core's attempt
// table allocates a node per launch and frees it per ended attempt; through
// malloc that was a tenth of a no-op's scheduler time (issue 41: tcache
// holds few blocks, so batches of hundreds went through the bins and
// malloc_consolidate). The container, its hashing and its iteration order
// are unchanged; only where its nodes live is.
//
// Single-threaded, like the container it serves. Chunks go back when the
// pool is destroyed (declare it before the containers that use it), so its
// memory is the most nodes held at once. Larger blocks (a hash table's
// bucket array) go to the heap.
#pragma once

#include <array>
#include <cstddef>
#include <memory_resource>
#include <new>
#include <vector>

namespace tailcut {

class NodePool final : public std::pmr::memory_resource {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() override {
    for (std::byte* c : chunks_) ::operator delete(c);
  }

 private:
  static constexpr size_t kGrain = 16;        // block sizes: multiples of it
  static constexpr size_t kMaxBlock = 512;    // larger ones: the heap
  static constexpr size_t kChunk = 64 << 10;  // carved into blocks
  struct Free {
    Free* next;
  };

  void* do_allocate(size_t bytes, size_t align) override {
    if (bytes > kMaxBlock || align > kGrain) return ::operator new(bytes, std::align_val_t(align));
    const size_t c = Class(bytes);
    if (Free* f = free_[c]) {
      free_[c] = f->next;
      return f;
    }
    const size_t size = (c + 1) * kGrain;
    if (left_ < size) {
      chunks_.push_back(static_cast<std::byte*>(::operator new(kChunk)));  // aligned for max_align_t
      next_ = chunks_.back();
      left_ = kChunk;
    }
    void* p = next_;
    next_ += size;
    left_ -= size;
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t align) override {
    if (bytes > kMaxBlock || align > kGrain) {
      // Unsized: clang declares sized delete only with -fsized-deallocation.
      ::operator delete(p, std::align_val_t(align));
      return;
    }
    const size_t c = Class(bytes);
    free_[c] = new (p) Free{free_[c]};
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
  static size_t Class(size_t bytes) { return bytes == 0 ? 0 : (bytes - 1) / kGrain; }

  std::array<Free*, kMaxBlock / kGrain> free_{};
  std::vector<std::byte*> chunks_;
  std::byte* next_ = nullptr;
  size_t left_ = 0;
};

}  // namespace tailcut
