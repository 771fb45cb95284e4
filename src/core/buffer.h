// Buffer: an owning, 64-byte aligned allocation. Large buffers are 2 MiB aligned and advised
// MADV_HUGEPAGE (their whole 2 MiB pieces; the partial tail stays in small pages) so a decode step that streams
// all weights can use the full memory bandwidth.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tinfer {

class Buffer {
 public:
  Buffer() = default;
  // Allocates `bytes` (zero-filled). huge=true and >= 1 MiB: 2 MiB aligned + MADV_HUGEPAGE (weights, KV).
  explicit Buffer(size_t bytes, bool huge = false);
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
};

// Bytes of `p`..`p+bytes` currently backed by transparent huge pages (from /proc/self/smaps), -1 if unknown.
long long huge_page_bytes(const void* p, size_t bytes);

}  // namespace tinfer
