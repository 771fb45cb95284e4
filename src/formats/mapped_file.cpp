// MappedFile: open + fstat + mmap(PROT_READ, MAP_PRIVATE); the descriptor is closed right after
// mapping (the mapping keeps the file alive). Live mappings are listed (a mutex-guarded set of ranges) so
// drop_resident can tell a mapped file's pages from heap memory, where MADV_DONTNEED would zero data.
#include "formats/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "tinfer/error.h"

namespace tinfer {

namespace {

struct LiveMappings {
  std::mutex mu;
  std::map<uintptr_t, size_t> ranges;  // start -> bytes
};

LiveMappings& live() {
  static LiveMappings* m = new LiveMappings;  // never destroyed: mappings may outlive static destruction
  return *m;
}

}  // namespace

size_t MappedFile::drop_resident(const void* p, size_t n) {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  if (!p || n == 0) return 0;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = (lo + page - 1) / page * page, b = (lo + n) / page * page;  // whole pages only
  if (a >= b) return 0;
  LiveMappings& m = live();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.ranges.upper_bound(lo);
  if (it == m.ranges.begin()) return 0;
  --it;
  if (lo + n > it->first + it->second) return 0;  // not (wholly) inside one mapped file
  if (::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED) != 0) return 0;
  return b - a;
}

MappedFile MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("'" + path + "' is not a regular file");
  }
  MappedFile m;
  m.path_ = path;
  m.size_ = static_cast<size_t>(st.st_size);
  if (m.size_ > 0) {
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail("cannot mmap '" + path + "' (" + std::to_string(m.size_) + " bytes): " + std::strerror(e));
    }
    m.data_ = static_cast<const uint8_t*>(p);
    LiveMappings& lm = live();
    std::lock_guard<std::mutex> lock(lm.mu);
    lm.ranges[reinterpret_cast<uintptr_t>(p)] = m.size_;
  }
  ::close(fd);
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), path_(std::move(o.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    path_ = std::move(o.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (data_) {
    LiveMappings& lm = live();
    std::lock_guard<std::mutex> lock(lm.mu);  // held across munmap: no drop_resident on a range being unmapped
    lm.ranges.erase(reinterpret_cast<uintptr_t>(data_));
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tinfer
