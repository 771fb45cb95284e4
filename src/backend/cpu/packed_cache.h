// PackedCache: a model's packed weights in one file (`--packed-cache DIR`), so that a later load of the same
// model reads them back instead of packing them again.
//
// Key (stored in the file, compared in full): the source's absolute path, its device/inode/size/mtime, the
// GGUF fingerprint (model_identity.h: metadata, tensor table, each tensor's first and last 256 bytes), the
// cache format version and a layout probe (every packed format's bytes for one fixed ragged matrix, so that a
// change to any tile layout invalidates every cache even if nobody bumps the version). A file whose key, header,
// index or sampled contents do not check out is named on stderr with the reason and rewritten; a cache never
// fails a load: a write that fails (disk full, read-only directory) is a warning and the load keeps its packing.
//
// File: [64-byte header][pad to 4096][matrix 0, 4096-aligned][matrix 1]...[index]. Header: magic "TINFPACK",
// version, index offset and bytes, file bytes, FNV of the index. Index: the key, then per matrix its request
// (the source tensors' names, type, rows, cols), offset, bytes and an FNV of its first and last 4 KiB.
// Written to DIR/<stem>-<hash>.tpack.tmp.<pid>.<n>, synced, then renamed over DIR/<stem>-<hash>.tpack (atomic: a
// reader sees the old file or the new, never half of one); an older file of the same source path and a
// different fingerprint (the model was rewritten) is removed then.
//
// Map mode (the default, --packed-cache-mode map): the matrices are used where they lie in a read-only,
// populated mapping of the file (page-cache pages shared between processes; every matrix's Buffer holds the
// mapping). The file is only ever replaced by rename, never written in place, so a mapped file never changes
// under a reader. Copy mode: read into the huge-page buffers packing fills, on every thread of the pool, so a
// cached load decodes exactly as a packed one (docs/BENCHMARKS.md §1w-4 measures both).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace tinfer {

class Model;
class ThreadPool;

class PackedCache {
 public:
  // Looks DIR/<stem>-<hash>.tpack up for `model` (DIR is created if missing). Never throws for the cache's
  // sake: an unusable directory is a warning and a cache that neither reads nor writes.
  // map: a valid file's matrices are used where they lie in a read-only mapping of it (page cache pages, shared
  // between processes, no copy); otherwise they are read into huge-page buffers.
  PackedCache(const std::string& dir, const Model& model, ThreadPool& pool, bool map = true);
  ~PackedCache();
  PackedCache(const PackedCache&) = delete;
  PackedCache& operator=(const PackedCache&) = delete;

  // The load's next matrix, when the file holds it: the i-th call must ask for the i-th entry (`desc`: the
  // source tensors' names), and its sampled contents must check out. nullopt: pack it (and rewrite the file).
  std::optional<PackedMatrix> take(const std::string& desc, DType type, int64_t rows, int64_t cols);
  // Every matrix of the load, in order (taken or packed); m's bytes must stay where they are until finish()
  // (a PackedMatrix may move: its buffer does not).
  void record(const std::string& desc, const PackedMatrix& m);
  // After the last matrix: writes the file unless every matrix came from it. Returns what happened, for the
  // load's progress line ("read 1048 MiB from ...", "wrote ...", "cannot write ...: reason").
  std::string finish();

  // The layout probe: FNV of every packed format's bytes for one fixed matrix (exposed for tests).
  static std::string layout_probe();
  static constexpr uint32_t kVersion = 1;

 private:
  struct Request {  // what the load asks for: the source tensors' names, type and shape
    std::string desc;
    DType type;
    int64_t rows, cols;
    bool operator==(const Request&) const = default;
  };
  struct Entry {  // a matrix of the file
    Request req;
    uint64_t offset, bytes, sample;
  };
  struct Recorded {  // a matrix of this load, for write_file
    Request req;
    const uint8_t* data;
    size_t bytes;
  };
  void open_existing();
  void invalidate(const std::string& why);
  bool write_file(std::string& why) const;
  void remove_stale_siblings() const;

  ThreadPool& pool_;
  std::string dir_, path_, key_, source_line_, stem_;
  int fd_ = -1;                    // the valid file being read, or -1 (none, or invalidated by a miss)
  std::vector<Entry> entries_;     // its index
  size_t next_ = 0;                // the next entry take() expects
  bool usable_ = true;             // the directory exists and can be written
  bool map_mode_ = true;
  // Map mode: the mapping of fd_ that matrices borrow, kept alive by every one of them. Mapped from the
  // descriptor that was validated, not reopened by path, so a concurrent rename cannot swap the file.
  std::shared_ptr<const void> map_;
  size_t read_bytes_ = 0;
  std::vector<Recorded> recorded_;
};

}  // namespace tinfer
