// Buffer implementation: mmap for large (huge-page) buffers, aligned_alloc for small ones.
#include "core/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <utility>

#include "tinfer/error.h"

namespace tinfer {

namespace {
constexpr size_t kHuge = size_t(2) << 20;
constexpr size_t kAlign = 64;
size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
}  // namespace

Buffer::Buffer(size_t bytes, BufferPages pages) : size_(bytes) {
  if (bytes == 0) return;
  // Below 1 MiB a huge page would mostly hold padding (and tiny models have many tiny tensors).
  if (pages != BufferPages::heap && bytes >= (size_t(1) << 20)) {
    // Over-map by 2 MiB so the start can be aligned to a huge-page boundary.
    size_t len = round_up(bytes, kHuge) + kHuge;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("out of memory: cannot map " + std::to_string(bytes) + " bytes");
    auto base = reinterpret_cast<uintptr_t>(p);
    uintptr_t aligned = round_up(base, kHuge);
    if (aligned > base) munmap(p, aligned - base);
    size_t keep = round_up(bytes, kHuge);
    uintptr_t end = base + len;
    if (end > aligned + keep) munmap(reinterpret_cast<void*>(aligned + keep), end - (aligned + keep));
    data_ = reinterpret_cast<uint8_t*>(aligned);
    mapped_ = keep;
    // Huge pages for the whole 2 MiB pieces only: a huge page on the partial tail would fault in up to 2 MiB
    // of padding on first touch (a model's ~100 weight matrices: ~100 MiB of resident zeros).
    if (pages == BufferPages::huge && bytes >= kHuge) madvise(data_, bytes / kHuge * kHuge, MADV_HUGEPAGE);
  } else {
    data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlign, round_up(bytes, kAlign)));
    if (!data_) fail("out of memory: cannot allocate " + std::to_string(bytes) + " bytes");
    std::memset(data_, 0, bytes);
  }
}

Buffer Buffer::borrow(uint8_t* data, size_t bytes, std::shared_ptr<const void> owner) {
  Buffer b;
  b.data_ = data, b.size_ = bytes, b.owner_ = std::move(owner);
  return b;
}

void Buffer::release() {
  if (!data_) return;
  if (owner_) owner_.reset();
  else if (mapped_) munmap(data_, mapped_);
  else std::free(data_);
  data_ = nullptr;
  size_ = mapped_ = 0;
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, 0)),
      owner_(std::move(o.owner_)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    owner_ = std::move(o.owner_);
  }
  return *this;
}

long long huge_page_bytes(const void* p, size_t bytes) {
  std::ifstream f("/proc/self/smaps");
  if (!f) return -1;
  auto lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
  std::string line;
  bool in = false;
  long long total = 0;
  while (std::getline(f, line)) {
    unsigned long a = 0, b = 0;
    if (line.find('-') != std::string::npos && std::sscanf(line.c_str(), "%lx-%lx", &a, &b) == 2 &&
        line.find(':') > line.find(' ')) {
      in = a < hi && b > lo;
      continue;
    }
    if (in && line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream ss(line.substr(14));
      long long kb = 0;
      ss >> kb;
      total += kb * 1024;
    }
  }
  return total;
}

}  // namespace tinfer
