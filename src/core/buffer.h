// Buffer: an owning, 64-byte aligned allocation. Large buffers are 2 MiB aligned and advised
// MADV_HUGEPAGE (their whole 2 MiB pieces; the partial tail stays in small pages) so a decode step that streams
// all weights can use the full memory bandwidth.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tinfer {

// How a Buffer's pages come (all three read as zeros until written):
//   heap  -- aligned_alloc + memset: every page touched now (small buffers, scratch);
//   huge  -- from 1 MiB: mmap, 2 MiB aligned, MADV_HUGEPAGE on the whole 2 MiB pieces (packed weights, written
//            once at load, then streamed by every decode step);
//   lazy  -- from 1 MiB: mmap without advice, pages faulted in on first write. For the KV arena, reserved for
//            the worst case and filled over the server's life: huge pages there would fault in 2 MiB at a time
//            in the middle of serving, and with THP defrag "madvise" (Debian's default) each such fault may
//            compact memory directly -- on SmolLM2 every K and V region of all 30 layers crossed a 2 MiB
//            boundary in the same step every ~340 blocks, one request's TTFT in ~38 paid ~60 of those faults
//            (+200-270 ms on a 270 ms prefill).
enum class BufferPages { heap, huge, lazy };

class Buffer {
 public:
  Buffer() = default;
  // Allocates `bytes` (zero-filled). huge=true: BufferPages::huge, else heap.
  explicit Buffer(size_t bytes, bool huge = false) : Buffer(bytes, huge ? BufferPages::huge : BufferPages::heap) {}
  Buffer(size_t bytes, BufferPages pages);
  // Memory someone else owns (a mapped file): `owner` keeps it alive as long as this buffer or its moves.
  static Buffer borrow(uint8_t* data, size_t bytes, std::shared_ptr<const void> owner);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  template <class T> T* as() { return reinterpret_cast<T*>(data_); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data_); }

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // >0 when the memory came from mmap
  std::shared_ptr<const void> owner_;  // set for borrowed memory (neither freed nor unmapped here)
};

// Bytes of `p`..`p+bytes` currently backed by transparent huge pages (from /proc/self/smaps), -1 if unknown.
long long huge_page_bytes(const void* p, size_t bytes);

}  // namespace tinfer
