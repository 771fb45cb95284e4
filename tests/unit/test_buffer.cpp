// Buffer's three page policies (core/buffer.h): every one reads as zeros; huge is 2 MiB aligned; lazy maps its
// bytes without touching them (no resident pages until written, and written pages come in small pages where
// THP is "madvise" or "never": the KV arena must not fault 2 MiB huge pages in the middle of serving).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/buffer.h"

namespace tinfer {
namespace {

// Resident bytes of [p, p + bytes) by mincore (page granular).
size_t resident_bytes(const uint8_t* p, size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<uint8_t*>(p), bytes, v.data()), 0);
  size_t n = 0;
  for (unsigned char c : v) n += (c & 1) ? page : 0;
  return n;
}

std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(in, s);
  const size_t a = s.find('['), b = s.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : s.substr(a + 1, b - a - 1);
}

TEST(Buffer, EveryPolicyReadsAsZeros) {
  for (BufferPages p : {BufferPages::heap, BufferPages::huge, BufferPages::lazy})
    for (size_t bytes : {size_t(100), size_t(3) << 20}) {
      Buffer b(bytes, p);
      ASSERT_EQ(b.size(), bytes);
      size_t nonzero = 0;
      for (size_t i = 0; i < bytes; i += 4093) nonzero += b.data()[i] != 0;
      EXPECT_EQ(nonzero, 0u);
      b.data()[bytes - 1] = 7;  // writable to the last byte
    }
}

TEST(Buffer, HugeIsAlignedToTwoMiB) {
  Buffer b(size_t(5) << 20, BufferPages::huge);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (uintptr_t(2) << 20), 0u);
}

TEST(Buffer, LazyTouchesNothingUntilWrittenAndTakesSmallPages) {
  const size_t bytes = size_t(64) << 20, page = size_t(sysconf(_SC_PAGESIZE));
  Buffer b(bytes, BufferPages::lazy);
  EXPECT_EQ(resident_bytes(b.data(), bytes), 0u);
  for (size_t i = 0; i < (size_t(4) << 20); i += page) b.data()[i] = 1;  // the first 4 MiB, one byte a page
  const size_t res = resident_bytes(b.data(), bytes);
  EXPECT_GE(res, size_t(4) << 20);
  const std::string mode = thp_mode();
  if (mode == "madvise" || mode == "never") {
    EXPECT_EQ(res, size_t(4) << 20);  // no 2 MiB page faulted beyond what was written
    EXPECT_LE(huge_page_bytes(b.data(), bytes), 0);
  } else {
    std::printf("THP mode '%s': the kernel may back the lazy buffer with huge pages (no stall: not madvised)\n",
                mode.c_str());
  }
  // A huge buffer written the same way is backed by huge pages where THP allows them (not asserted: the kernel
  // may have none free); shown for the record.
  Buffer h(bytes, BufferPages::huge);
  for (size_t i = 0; i < (size_t(4) << 20); i += page) h.data()[i] = 1;
  std::printf("huge: %lld of the written 4 MiB in huge pages; lazy: %lld\n", huge_page_bytes(h.data(), bytes),
              huge_page_bytes(b.data(), bytes));
}

}  // namespace
}  // namespace tinfer
