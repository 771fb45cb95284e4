// WeightPacker: CpuForward's load path. Packs GGUF tensors into the kernels' tiles on every thread of the
// pool, then gives the tensors' mapped file pages back (MappedFile::drop_resident), so a loaded model
// holds one copy of its weights, not the packed copy beside the file's pages; prints a progress line on
// stderr once a load has run for a second. With a PackedCache it takes each matrix from the cache file when
// the file holds it, and records every matrix so that the cache can write the file after the load.
#pragma once
#include <chrono>
#include <cstddef>
#include <span>

#include "formats/gguf.h"
#include "kernels/kernels.h"

namespace tinfer {

class PackedCache;
class ThreadPool;

class WeightPacker {
 public:
  // total_bytes: the bytes the load will pack (the progress line's denominator). cache: optional.
  WeightPacker(ThreadPool& pool, size_t total_bytes, PackedCache* cache = nullptr);
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
  PackedCache* cache_ = nullptr;
  size_t total_ = 0, done_ = 0, released_ = 0, cached_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
  bool printed_ = false;
};

}  // namespace tinfer
