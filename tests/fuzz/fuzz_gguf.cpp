// libFuzzer target: any byte string must either load as GGUF or throw tinfer::Error. Loaded files
// have every metadata value and every tensor byte read, so ASan catches out-of-range views.
#include <cstddef>
#include <cstdint>

#include "tinfer/error.h"
#include "formats/gguf.h"

namespace {

uint64_t touch(const tinfer::GgufValue& v) {
  uint64_t h = uint64_t(v.type);
  if (const auto* s = std::get_if<std::string>(&v.v)) {
    for (char c : *s) h = h * 31 + uint8_t(c);
  } else if (const auto* a = std::get_if<std::shared_ptr<tinfer::GgufArray>>(&v.v)) {
    for (const auto& e : (*a)->values) h += touch(e);
  } else if (const auto* i = std::get_if<int64_t>(&v.v)) {
    h += uint64_t(*i);
  } else if (const auto* u = std::get_if<uint64_t>(&v.v)) {
    h += *u;
  }
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tinfer::GgufFile f = tinfer::GgufFile::from_bytes(data, size);
    volatile uint64_t sink = f.version() + f.alignment();
    for (const auto& [k, v] : f.metadata()) {
      sink = sink + k.size() + touch(v);
      // The typed getters must also either answer or throw Error.
      try {
        (void)f.get_int(k);
      } catch (const tinfer::Error&) {
      }
      try {
        (void)f.get_float_array(k);
      } catch (const tinfer::Error&) {
      }
      try {
        (void)f.get_string_array(k);
      } catch (const tinfer::Error&) {
      }
    }
    for (const tinfer::GgufTensor& t : f.tensors()) {
      sink = sink + uint64_t(t.elements()) + t.offset;
      for (size_t i = 0; i < t.bytes; ++i) sink = sink + t.data[i];
    }
  } catch (const tinfer::Error&) {
  }
  return 0;
}
