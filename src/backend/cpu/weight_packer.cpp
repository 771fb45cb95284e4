// WeightPacker: pack on the pool, release the source pages, report progress.
#include "backend/cpu/weight_packer.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tinfer/error.h"
#include "backend/cpu/packed_cache.h"
#include "core/thread_pool.h"
#include "formats/mapped_file.h"
#include "kernels/pack.h"

namespace tinfer {

namespace {
constexpr auto kQuiet = std::chrono::seconds(1);  // no line for a load that ends sooner, then one a second
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

WeightPacker::WeightPacker(ThreadPool& pool, size_t total_bytes, PackedCache* cache)
    : pool_(pool), cache_(cache), total_(total_bytes), start_(std::chrono::steady_clock::now()), last_(start_) {}

WeightPacker::~WeightPacker() {
  if (!printed_) return;
  std::fprintf(stderr,
               "loading: %.0f MiB of weights in %.1f s on %d threads (%.0f MiB read from the packed cache), %.0f MiB "
               "of file pages given back\n",
               double(done_) / (1 << 20), seconds(std::chrono::steady_clock::now() - start_), pool_.size(),
               double(cached_) / (1 << 20), double(released_) / (1 << 20));
}

PackedMatrix WeightPacker::pack(std::span<const GgufTensor* const> parts) {
  check(!parts.empty(), "WeightPacker::pack: no tensors");
  const GgufTensor& first = *parts.front();
  std::vector<PackPart> src;
  std::string desc;  // the cache's name for the matrix: its tensors, in order
  int64_t rows = 0;
  for (const GgufTensor* t : parts) {
    check(t->type == first.type && t->shape[0] == first.shape[0],
          "WeightPacker::pack: stacked tensors differ in type or row length ('" + t->name + "')");
    src.push_back({t->data, t->shape.size() > 1 ? t->shape[1] : 1});
    desc += (desc.empty() ? "" : " | ") + t->name;
    rows += src.back().rows;
  }
  std::optional<PackedMatrix> cached = cache_ ? cache_->take(desc, first.type, rows, first.shape[0]) : std::nullopt;
  if (cached) cached_ += cached->data.size();
  PackedMatrix m = cached ? std::move(*cached) : pack_matrix(first.type, src, first.shape[0], &pool_);
  if (cache_) cache_->record(desc, m);
  for (const GgufTensor* t : parts) {
    done_ += t->bytes;
    release(*t);
  }
  progress();
  return m;
}

void WeightPacker::release(const GgufTensor& t) { released_ += MappedFile::drop_resident(t.data, t.bytes); }

void WeightPacker::progress() {
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < kQuiet || now - last_ < kQuiet || total_ == 0) return;
  last_ = now;
  printed_ = true;
  std::fprintf(stderr, "loading: weights %3.0f%% (%.0f / %.0f MiB, %.1f s)\n", 100.0 * double(done_) / double(total_),
               double(done_) / (1 << 20), double(total_) / (1 << 20), seconds(now - start_));
}

}  // namespace tinfer
