// A read-only memory mapping of a whole file (RAII). Weights are mapped, not read: the OS pages
// them in on first touch and shares them between processes.
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

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tinfer
