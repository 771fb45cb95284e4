// PackedCache: look up, read back and (re)write a model's packed weights (see packed_cache.h).
#include "backend/cpu/packed_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/fnv1a.h"
#include "core/thread_pool.h"
#include "kernels/pack.h"
#include "kernels/packed_format.h"
#include "model/model.h"
#include "model/model_identity.h"
#include "quant/type_table.h"
#include "tinfer/error.h"

namespace tinfer {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'T', 'I', 'N', 'F', 'P', 'A', 'C', 'K'};
constexpr uint64_t kAlign = 4096;   // every matrix starts on a page
constexpr size_t kHeader = 64;      // magic, version, index offset/bytes, file bytes, index hash, padding
constexpr size_t kSampled = 4096;   // an entry's FNV covers its first and last 4 KiB
constexpr size_t kChunk = 8u << 20; // reads and writes in 8 MiB pieces
constexpr uint64_t kMaxIndex = 64u << 20;

uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

std::string errno_text() { return std::strerror(errno); }

bool pread_all(int fd, void* dst, size_t n, uint64_t off);

// The fixed header at offset 0: magic, version, index offset and bytes, file bytes, FNV of the index.
struct Header {
  uint32_t version = 0;
  uint64_t index_at = 0, index_bytes = 0, file_bytes = 0, index_hash = 0;

  // false: shorter than a header or another magic.
  bool read(int fd) {
    char b[kHeader];
    if (!pread_all(fd, b, kHeader, 0) || std::memcmp(b, kMagic, 8) != 0) return false;
    std::memcpy(&version, b + 8, 4);
    std::memcpy(&index_at, b + 16, 8), std::memcpy(&index_bytes, b + 24, 8);
    std::memcpy(&file_bytes, b + 32, 8), std::memcpy(&index_hash, b + 40, 8);
    return true;
  }
  std::string bytes() const {
    std::string b(kHeader, '\0');
    std::memcpy(b.data(), kMagic, 8), std::memcpy(b.data() + 8, &version, 4);
    std::memcpy(b.data() + 16, &index_at, 8), std::memcpy(b.data() + 24, &index_bytes, 8);
    std::memcpy(b.data() + 32, &file_bytes, 8), std::memcpy(b.data() + 40, &index_hash, 8);
    return b;
  }
};

uint64_t sample_hash(const uint8_t* p, size_t n) {
  Fnv1a64 h;
  h.u64(n);
  const size_t s = std::min(kSampled, n);
  h.bytes(p, s);
  h.bytes(p + n - s, s);
  return h.value();
}

// Little-endian fields of the header and the index, appended and read back with bounds checks.
class Writer {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(const std::string& s) { u64(s.size()), raw(s.data(), s.size()); }
  void raw(const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
  std::string out;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  uint32_t u32() { uint32_t v; raw(&v, 4); return v; }
  uint64_t u64() { uint64_t v; raw(&v, 8); return v; }
  std::string str() {
    const uint64_t n = u64();
    check(n <= s_.size() - at_, "the index is cut short");
    std::string v = s_.substr(at_, n);
    at_ += n;
    return v;
  }
  void raw(void* p, size_t n) {
    check(n <= s_.size() - at_, "the index is cut short");
    std::memcpy(p, s_.data() + at_, n);
    at_ += n;
  }
  bool done() const { return at_ == s_.size(); }

 private:
  const std::string& s_;
  size_t at_ = 0;
};

// pread/pwrite until done (they may move fewer bytes); false with errno set on failure or end of file.
bool pread_all(int fd, void* dst, size_t n, uint64_t off) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, off_t(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return false;
    }
    p += r, n -= size_t(r), off += uint64_t(r);
  }
  return true;
}

bool pwrite_all(int fd, const void* src, size_t n, uint64_t off) {
  const auto* p = static_cast<const uint8_t*>(src);
  while (n > 0) {
    const ssize_t r = ::pwrite(fd, p, n, off_t(off));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    p += r, n -= size_t(r), off += uint64_t(r);
  }
  return true;
}

// The file name's hash and the key's first line: where the weights come from.
std::string source_line(const Model& model) {
  std::error_code ec;
  const fs::path abs = model.path().empty() ? fs::path() : fs::absolute(model.path(), ec);
  return "source " + (abs.empty() ? std::string("(memory)") : abs.string());
}

std::string stat_line(const Model& model) {
  struct stat st {};
  if (model.path().empty() || ::stat(model.path().c_str(), &st) != 0) return "stat none";
  return "stat " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) +
         ":" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

std::string PackedCache::layout_probe() {
  // 17 rows (a ragged tile) of two blocks each, bytes from a fixed LCG: every format's tiles, scales and
  // padding rules show up in the packed bytes.
  static const std::string probe = [] {
    Fnv1a64 h;
    auto probe_one = [&](DType type, int64_t cols) {
      const int64_t rows = 17;
      std::vector<uint8_t> src(size_t(rows) * row_bytes(type, cols));
      uint32_t x = 12345;
      for (uint8_t& b : src) x = x * 1664525u + 1013904223u, b = uint8_t(x >> 24);
      if (type == DType::F16 || type == DType::BF16)
        for (size_t i = 1; i < src.size(); i += 2) src[i] &= 0x3f;  // finite halves
      const PackedMatrix m = pack_matrix(type, src.data(), rows, cols);
      h.u64(uint64_t(type)), h.u64(m.data.size()), h.bytes(m.data.data(), m.data.size());
    };
    for (const packed::PackedFormat& f : packed::kFormats) probe_one(f.type, 2 * f.g.block);
    probe_one(DType::F16, 64);
    probe_one(DType::BF16, 64);
    return h.hex();
  }();
  return probe;
}

PackedCache::PackedCache(const std::string& dir, const Model& model, ThreadPool& pool, bool map)
    : pool_(pool), dir_(dir), map_mode_(map) {
  source_line_ = source_line(model);
  stem_ = model.path().empty() ? "model" : fs::path(model.path()).stem().string();
  const std::string fingerprint = gguf_fingerprint(model.gguf());
  Fnv1a64 name;
  name.str(source_line_), name.str(fingerprint);
  path_ = (fs::path(dir) / (stem_ + "-" + name.hex() + ".tpack")).string();
  key_ = source_line_ + "\n" + stat_line(model) + "\nfingerprint " + fingerprint + "\nversion " +
         std::to_string(kVersion) + "\nlayout " + layout_probe() + "\n";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    std::fprintf(stderr, "packed cache: cannot use directory '%s' (%s); packing without a cache\n", dir.c_str(),
                 ec ? ec.message().c_str() : "not a directory");
    usable_ = false;
    return;
  }
  open_existing();
}

PackedCache::~PackedCache() {
  if (fd_ >= 0) ::close(fd_);
}

void PackedCache::invalidate(const std::string& why) {
  std::fprintf(stderr, "packed cache: %s: %s; packing and rewriting it\n", path_.c_str(), why.c_str());
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  entries_.clear();
  map_.reset();  // (matrices already taken keep the mapping alive)
}

void PackedCache::open_existing() {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    if (errno != ENOENT) invalidate("cannot open it (" + errno_text() + ")");
    return;  // a first load: nothing to say
  }
  try {
    struct stat st {};
    check(::fstat(fd_, &st) == 0, "cannot stat it (" + errno_text() + ")");
    const uint64_t size = uint64_t(st.st_size);
    check(size >= kHeader, "shorter than its header");
    Header head;
    check(head.read(fd_), "not a packed cache (bad magic)");
    const auto [version, index_at, index_bytes, file_bytes, index_hash] = head;
    check(version == kVersion, "cache format version " + std::to_string(version) + ", this build reads " +
                                   std::to_string(kVersion));
    check(file_bytes == size, "truncated or extended: " + std::to_string(size) + " bytes, its header says " +
                                  std::to_string(file_bytes));
    check(index_bytes <= kMaxIndex && index_at >= kAlign && index_at <= size && index_bytes == size - index_at,
          "the header's index bounds are off");
    std::string index(index_bytes, '\0');
    check(pread_all(fd_, index.data(), index.size(), index_at), "cannot read its index (" + errno_text() + ")");
    Fnv1a64 h;
    h.bytes(index.data(), index.size());
    check(h.value() == index_hash, "its index does not match its checksum");
    Reader r(index);
    const std::string key = r.str();
    if (key != key_) {
      // Same path and fingerprint, something else moved (the file was touched, a new layout): say what.
      std::string differs = "its key differs";
      for (const char* field : {"stat ", "version ", "layout "}) {
        const auto a = key.find(std::string("\n") + field), b = key_.find(std::string("\n") + field);
        if (a == std::string::npos || b == std::string::npos ||
            key.substr(a, key.find('\n', a + 1) - a) != key_.substr(b, key_.find('\n', b + 1) - b)) {
          differs = std::string("made for another ") +
                    (field[0] == 's' ? "copy or modification time of the model file"
                                     : field[0] == 'v' ? "cache format version" : "packed layout");
          break;
        }
      }
      fail(differs);
    }
    const uint64_t n = r.u64();
    check(n <= 1u << 20, "the index claims " + std::to_string(n) + " matrices");
    uint64_t end = kAlign;
    for (uint64_t i = 0; i < n; ++i) {
      Entry e;
      e.req.desc = r.str();
      e.req.type = DType(r.u32());
      e.req.rows = int64_t(r.u64()), e.req.cols = int64_t(r.u64());
      e.offset = r.u64(), e.bytes = r.u64(), e.sample = r.u64();
      check(e.offset % kAlign == 0 && e.offset >= end && e.bytes > 0 && e.bytes <= index_at - e.offset,
            "entry " + std::to_string(i) + " ('" + e.req.desc + "') lies outside the data");
      end = e.offset + e.bytes;
      entries_.push_back(std::move(e));
    }
    check(r.done(), "trailing bytes after the index");
    if (map_mode_) {
      // Populated now: a cold file is read here, before the server says ready, not in the first steps.
      void* p = ::mmap(nullptr, index_at, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, 0);
      check(p != MAP_FAILED, "cannot map it (" + errno_text() + ")");
      const size_t len = index_at;
      map_ = std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
    } else {
      ::posix_fadvise(fd_, 0, off_t(index_at), POSIX_FADV_WILLNEED);  // a cold file: start reading it all now
    }
  } catch (const Error& e) {
    invalidate(e.what());
  }
}

std::optional<PackedMatrix> PackedCache::take(const std::string& desc, DType type, int64_t rows, int64_t cols) {
  auto miss = [&](const std::string& why) -> std::optional<PackedMatrix> {
    invalidate(why);
    return std::nullopt;
  };
  if (fd_ < 0) return std::nullopt;
  if (next_ >= entries_.size())
    return miss("it holds " + std::to_string(entries_.size()) + " matrices, the load asks for more");
  const Entry& e = entries_[next_];
  if (!(e.req == Request{desc, type, rows, cols}))
    return miss("matrix " + std::to_string(next_) + " is '" + e.req.desc + "', the load asks for '" + desc + "'");
  PackedMatrix m;
  m.type = type, m.rows = rows, m.cols = cols;
  if (map_) {
    const auto* base = static_cast<const uint8_t*>(map_.get());
    m.data = Buffer::borrow(const_cast<uint8_t*>(base + e.offset), e.bytes, map_);  // read-only pages
  } else {
    m.data = Buffer(e.bytes, BufferPages::huge);  // where packing would have put it
    uint8_t* dst = m.data.data();
    std::atomic<int> err{0};
    const int64_t chunks = int64_t((e.bytes + kChunk - 1) / kChunk);
    pool_.parallel_for(chunks, 1, [&](int64_t b, int64_t en) {
      for (int64_t c = b; c < en; ++c) {
        const uint64_t at = uint64_t(c) * kChunk, n = std::min<uint64_t>(kChunk, e.bytes - at);
        if (!pread_all(fd_, dst + at, n, e.offset + at)) err.store(errno ? errno : EIO);
      }
    });
    if (err.load() != 0) return miss("cannot read matrix '" + desc + "' (" + std::strerror(err.load()) + ")");
  }
  if (sample_hash(m.data.data(), e.bytes) != e.sample) return miss("matrix '" + desc + "' does not match its checksum");
  ++next_;
  read_bytes_ += e.bytes;
  return m;
}

void PackedCache::record(const std::string& desc, const PackedMatrix& m) {
  recorded_.push_back({{desc, m.type, m.rows, m.cols}, m.data.data(), m.data.size()});
}

std::string PackedCache::finish() {
  if (fd_ >= 0 && next_ == entries_.size())  // (any miss closed the file)
    return "read " + std::to_string(read_bytes_ >> 20) + " MiB of packed weights from " + path_;
  if (fd_ >= 0) invalidate("the load asked for " + std::to_string(next_) + " of its " +
                           std::to_string(entries_.size()) + " matrices");
  if (!usable_) return "";
  std::string why;
  if (!write_file(why)) {
    std::fprintf(stderr, "packed cache: cannot write %s (%s); loads keep packing\n", path_.c_str(), why.c_str());
    return "";
  }
  remove_stale_siblings();
  uint64_t total = 0;
  for (const Recorded& r : recorded_) total += r.bytes;
  return "wrote " + std::to_string(total >> 20) + " MiB of packed weights to " + path_;
}

bool PackedCache::write_file(std::string& why) const {
  static std::atomic<uint64_t> serial{0};  // two loads of one model in one process write two temporaries
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return why = errno_text(), false;
  Writer index;
  index.str(key_);
  index.u64(recorded_.size());
  uint64_t at = kAlign;
  bool ok = true;
  for (const Recorded& r : recorded_) {
    index.str(r.req.desc);
    index.u32(uint32_t(r.req.type));
    index.u64(uint64_t(r.req.rows)), index.u64(uint64_t(r.req.cols));
    index.u64(at), index.u64(r.bytes), index.u64(sample_hash(r.data, r.bytes));
    for (uint64_t done = 0; ok && done < r.bytes; done += kChunk)
      ok = pwrite_all(fd, r.data + done, std::min<uint64_t>(kChunk, r.bytes - done), at + done);
    if (!ok) break;
    at = align_up(at + r.bytes);
  }
  Fnv1a64 h;
  h.bytes(index.out.data(), index.out.size());
  const Header head{kVersion, at, index.out.size(), at + index.out.size(), h.value()};
  const std::string head_bytes = head.bytes();
  ok = ok && pwrite_all(fd, index.out.data(), index.out.size(), head.index_at) &&
       pwrite_all(fd, head_bytes.data(), head_bytes.size(), 0) && ::fdatasync(fd) == 0;
  if (!ok) why = errno_text();
  ok = ::close(fd) == 0 && ok;
  if (ok && ::rename(tmp.c_str(), path_.c_str()) != 0) why = errno_text(), ok = false;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

void PackedCache::remove_stale_siblings() const {
  // Files of this stem whose key names the same source path (the model file was rewritten since), and
  // temporaries of this file an hour old (a writer that died).
  std::error_code ec;
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::directory_entry& d : fs::directory_iterator(dir_, ec)) {
    const std::string name = d.path().filename().string();
    if (d.path().string().rfind(path_ + ".tmp.", 0) == 0) {
      if (d.last_write_time(ec) < hour_ago && !ec) fs::remove(d.path(), ec);
      continue;
    }
    if (d.path() == fs::path(path_) || name.rfind(stem_ + "-", 0) != 0 || d.path().extension() != ".tpack") continue;
    const int fd = ::open(d.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    Header head;
    std::string line(source_line_.size() + 9, '\0');  // the key's length field, then its first line
    if (head.read(fd) && head.index_bytes >= line.size() && pread_all(fd, line.data(), line.size(), head.index_at) &&
        line.compare(8, std::string::npos, source_line_ + "\n") == 0)
      fs::remove(d.path(), ec);
    ::close(fd);
  }
}

}  // namespace tinfer
