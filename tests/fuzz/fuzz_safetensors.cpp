// libFuzzer target: any byte string must either load as a safetensors file or throw tinfer::Error. Loaded files
// have every tensor byte read, so ASan catches a view past the data.
#include <cstddef>
#include <cstdint>

#include "tinfer/error.h"
#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tinfer::SafetensorsFile f = tinfer::SafetensorsFile::from_bytes(data, size, "fuzz");
    volatile uint64_t sink = 0;
    for (const tinfer::GgufTensor& t : f.tensors()) {
      sink = sink + uint64_t(t.elements()) + t.name.size();
      for (size_t i = 0; i < t.bytes; ++i) sink = sink + t.data[i];
    }
  } catch (const tinfer::Error&) {
  }
  return 0;
}
