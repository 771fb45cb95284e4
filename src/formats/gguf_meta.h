// Building GGUF metadata values in memory (the typed values GgufWriter::set and GgufFile::from_view take).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.h"

namespace tinfer {

class GgufMetaList {
 public:
  void u32(const std::string& k, uint64_t v) { add(k, {GgufType::UINT32, uint64_t(uint32_t(v))}); }
  void i32(const std::string& k, int64_t v) { add(k, {GgufType::INT32, int64_t(int32_t(v))}); }
  void f32(const std::string& k, double v) { add(k, {GgufType::FLOAT32, double(float(v))}); }
  void boolean(const std::string& k, bool v) { add(k, {GgufType::BOOL, v}); }
  void str(const std::string& k, std::string v) { add(k, {GgufType::STRING, std::move(v)}); }
  void strs(const std::string& k, const std::vector<std::string>& v) {
    array(k, GgufType::STRING, v, [](const std::string& s) { return GgufValue{GgufType::STRING, s}; });
  }
  void f32s(const std::string& k, const std::vector<float>& v) {
    array(k, GgufType::FLOAT32, v, [](float x) { return GgufValue{GgufType::FLOAT32, double(x)}; });
  }
  void i32s(const std::string& k, const std::vector<int32_t>& v) {
    array(k, GgufType::INT32, v, [](int32_t x) { return GgufValue{GgufType::INT32, int64_t(x)}; });
  }
  void u8s(const std::string& k, const std::string& bytes) {  // (a blob as llama.cpp writes one: an array of UINT8)
    array(k, GgufType::UINT8, bytes, [](char c) { return GgufValue{GgufType::UINT8, uint64_t(uint8_t(c))}; });
  }
  std::vector<std::pair<std::string, GgufValue>> take() { return std::move(kv_); }

 private:
  void add(const std::string& k, GgufValue v) { kv_.emplace_back(k, std::move(v)); }
  template <class V, class F>
  void array(const std::string& k, GgufType t, const V& values, F make) {
    auto a = std::make_shared<GgufArray>();
    a->elem_type = t;
    a->values.reserve(values.size());
    for (const auto& x : values) a->values.push_back(make(x));
    add(k, {GgufType::ARRAY, std::move(a)});
  }
  std::vector<std::pair<std::string, GgufValue>> kv_;
};

}  // namespace tinfer
