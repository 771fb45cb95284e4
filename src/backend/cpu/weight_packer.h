// WeightPacker: CpuForward's load path. Packs GGUF tensors into the kernels' tiles on every thread of the
// pool, then gives the tensors' mapped file pages back (MappedFile::drop_resident), so a loaded model
// holds one copy of its weights, not the packed copy beside the file's pages; prints a progress line on
// stderr once a load has run for a second.
#pragma once
#include <chrono>
#include <cstddef>
#include <span>

#include "formats/gguf.h"
#include "kernels/kernels.h"

namespace tinfer {

class ThreadPool;

class WeightPacker {
 public:
  // total_bytes: the bytes the load will pack (the progress line's denominator).
  WeightPacker(ThreadPool& pool, size_t total_bytes);
  ~WeightPacker();  // the closing line, when a progress line was printed
  WeightPacker(const WeightPacker&) = delete;
  WeightPacker& operator=(const WeightPacker&) = delete;

  // The parts' rows stacked in order (one type and row length: GGUF rows are independent).
  PackedMatrix pack(std::span<const GgufTensor* const> parts);
  PackedMatrix pack(const GgufTensor& t) {
    const GgufTensor* one = &t;
    return pack(std::span<const GgufTensor* const>(&one, 1));
  }
  // Gives a tensor's mapped pages back once nothing will read it again in bulk (the bytes stay readable).
  void release(const GgufTensor& t);

  size_t packed_bytes() const { return done_; }
  size_t released_bytes() const { return released_; }

 private:
  void progress();
  ThreadPool& pool_;
  size_t total_ = 0, done_ = 0, released_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
  bool printed_ = false;
};

}  // namespace tinfer
