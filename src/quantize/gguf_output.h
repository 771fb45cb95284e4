// The output GGUF of `tinfer quantize`, streamed: every tensor's type and shape (so its size) is known
// before any is quantized, so the header and tensor table are written first and each tensor's data is
// appended as it is produced; memory holds one tensor, never the file.
//
// The file is written as PATH.tmp-PID and renamed to PATH by commit(). Until then the temporary is
// removed when the object is destroyed (any error unwinding through the caller) and when the process
// gets SIGINT, SIGTERM or SIGHUP (a handler unlinks it, then re-raises the signal with its default
// action), so no partial output is ever left under either name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace tinfer {

class GgufOutputFile {
 public:
  // `layout`: metadata and every tensor declared (GgufWriter::declare_tensor). Creates the temporary
  // and writes the header; Error naming the path if it cannot.
  GgufOutputFile(const std::string& path, const GgufWriter& layout);
  ~GgufOutputFile();  // removes the temporary unless committed
  GgufOutputFile(const GgufOutputFile&) = delete;
  GgufOutputFile& operator=(const GgufOutputFile&) = delete;

  // The next tensor's data (declaration order), exactly its declared size; padded to the alignment.
  void append(const void* data, size_t bytes);
  // fsyncs and renames the temporary to the final path; Error unless every tensor was appended.
  void commit();

  uint64_t bytes_written() const { return written_; }
  uint64_t total_bytes() const { return total_; }  // the final file size
  const std::string& temp_path() const { return tmp_; }

 private:
  void write_all(const void* p, size_t n);
  std::string path_, tmp_;
  int fd_ = -1;
  size_t align_ = 32;
  std::vector<size_t> sizes_;
  size_t next_ = 0;
  uint64_t written_ = 0, total_ = 0;
  bool committed_ = false;
};

}  // namespace tinfer
