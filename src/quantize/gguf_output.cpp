// Streamed GGUF output with a temporary file, fsync + rename, and removal on errors and signals.
#include "quantize/gguf_output.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tinfer/error.h"

namespace tinfer {
namespace {

// The temporary to unlink from a signal handler: a fixed buffer (no allocation in the handler) and a flag.
// One output file at a time per process (the tool writes one).
char g_tmp_path[4096];
volatile sig_atomic_t g_armed = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

void on_signal(int sig) {
  if (g_armed) unlink(g_tmp_path);
  g_armed = 0;
  signal(sig, SIG_DFL);
  raise(sig);
}

void arm(const std::string& tmp) {
  check(tmp.size() < sizeof(g_tmp_path), "output path too long: '" + tmp + "'");
  std::memcpy(g_tmp_path, tmp.c_str(), tmp.size() + 1);
  g_armed = 1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
}

void disarm() {
  g_armed = 0;
  for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

GgufOutputFile::GgufOutputFile(const std::string& path, const GgufWriter& layout)
    : path_(path), tmp_(path + ".tmp-" + std::to_string(getpid())), align_(layout.alignment()) {
  const std::vector<uint8_t> header = layout.header_bytes();
  total_ = header.size();
  for (size_t i = 0; i < layout.tensor_count(); ++i) {
    sizes_.push_back(layout.tensor_bytes(i));
    total_ += (sizes_.back() + align_ - 1) / align_ * align_;
  }
  arm(tmp_);  // before the file exists: a signal between open and arm would otherwise leave it behind
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const std::string why = errno_text();
    disarm();
    fail("cannot create '" + tmp_ + "': " + why);
  }
  try {
    write_all(header.data(), header.size());
  } catch (...) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
    disarm();
    throw;
  }
}

GgufOutputFile::~GgufOutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) {
    ::unlink(tmp_.c_str());
    disarm();
  }
}

void GgufOutputFile::write_all(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd_, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write to '" + tmp_ + "' failed: " + (w < 0 ? errno_text() : std::string("no progress")));
    b += w;
    n -= size_t(w);
    written_ += uint64_t(w);
  }
}

void GgufOutputFile::append(const void* data, size_t bytes) {
  check(next_ < sizes_.size(), "GgufOutputFile: more tensors appended than declared");
  check(bytes == sizes_[next_], "GgufOutputFile: tensor " + std::to_string(next_) + " has " + std::to_string(bytes) +
                                    " bytes, declared " + std::to_string(sizes_[next_]));
  ++next_;
  write_all(data, bytes);
  static const uint8_t zeros[64] = {};
  size_t pad = (align_ - bytes % align_) % align_;
  while (pad > 0) {
    const size_t n = std::min(pad, sizeof(zeros));
    write_all(zeros, n);
    pad -= n;
  }
}

void GgufOutputFile::commit() {
  check(next_ == sizes_.size(), "GgufOutputFile: " + std::to_string(sizes_.size() - next_) + " tensors not written");
  check(written_ == total_,
        "GgufOutputFile: wrote " + std::to_string(written_) + " bytes, expected " + std::to_string(total_));
  if (::fsync(fd_) != 0) fail("fsync of '" + tmp_ + "' failed: " + errno_text());
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close of '" + tmp_ + "' failed: " + errno_text());
  }
  fd_ = -1;
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("cannot rename '" + tmp_ + "' to '" + path_ + "': " + errno_text());
  committed_ = true;
  disarm();
}

}  // namespace tinfer
