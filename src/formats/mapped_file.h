// A read-only memory mapping of a whole file (RAII). Weights are mapped, not read: the OS pages
// them in on first touch and shares them between processes. A backend that copies a tensor into a
// layout of its own gives the tensor's pages back (drop_resident), so the process holds one copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tinfer {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only. Throws Error naming the file on open/stat/mmap failure.
  // An empty file maps to data() == nullptr, size() == 0.
  static MappedFile open(const std::string& path);

  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Unmaps the pages wholly inside [p, p + n) from this process (madvise MADV_DONTNEED) when the range
  // lies in a live MappedFile; the mapping stays valid, and a later read faults the bytes back in from
  // the file (the page cache keeps them unless the system needs the memory). Returns the bytes given
  // back; 0 (and no effect) for memory that is not a mapped file's, such as an in-memory GGUF image.
  static size_t drop_resident(const void* p, size_t n);

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tinfer
