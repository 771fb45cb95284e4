// load_sentencepiece_model: a minimal protobuf wire-format reader for SentencePiece ModelProto
// (pieces, trainer_spec model type and special ids, normalizer_spec settings), bounds-checked throughout.
#include <cstring>
#include <fstream>
#include <iterator>

#include "tinfer/error.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/vocab.h"

namespace tinfer {
namespace {

// One protobuf message: iterate (field, wire type, value) over a byte span.
class WireReader {
 public:
  WireReader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ >= end_; }

  struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t varint = 0;                 // wire 0, and the raw bits of wire 1/5
    const uint8_t* data = nullptr;       // wire 2
    size_t size = 0;
  };

  Field next() {
    Field f;
    const uint64_t key = varint();
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    switch (f.wire) {
      case 0: f.varint = varint(); break;
      case 1: f.varint = fixed(8); break;
      case 5: f.varint = fixed(4); break;
      case 2: {
        const uint64_t n = varint();
        check(n <= static_cast<uint64_t>(end_ - p_), "SentencePiece model: field length past the end");
        f.data = p_;
        f.size = static_cast<size_t>(n);
        p_ += n;
        break;
      }
      default: fail("SentencePiece model: unsupported protobuf wire type " + std::to_string(f.wire));
    }
    return f;
  }

 private:
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      check(p_ < end_, "SentencePiece model: truncated varint");
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("SentencePiece model: varint too long");
  }
  uint64_t fixed(int n) {
    check(end_ - p_ >= n, "SentencePiece model: truncated fixed-width field");
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p_[i]) << (8 * i);
    p_ += n;
    return v;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

float as_float(uint64_t bits) {
  const uint32_t b = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

int32_t as_id(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }  // int32 varints sign-extend

}  // namespace

VocabData parse_sentencepiece_model(const uint8_t* data, size_t size) {
  VocabData d;
  d.model = "llama";
  d.add_bos = true;
  int32_t unk = -2, bos = -2, eos = -2, pad = -2;  // -2: not given by trainer_spec
  for (WireReader r(data, size); !r.done();) {
    const auto f = r.next();
    if (f.number == 1 && f.wire == 2) {  // repeated SentencePiece {piece=1, score=2, type=3}
      std::string piece;
      float score = 0;
      int32_t type = 1;
      for (WireReader m(f.data, f.size); !m.done();) {
        const auto g = m.next();
        if (g.number == 1 && g.wire == 2) piece.assign(reinterpret_cast<const char*>(g.data), g.size);
        else if (g.number == 2 && g.wire == 5) score = as_float(g.varint);
        else if (g.number == 3 && g.wire == 0) type = g.varint <= 6 ? static_cast<int32_t>(g.varint) : -1;
      }
      check(type >= 1, "SentencePiece model: piece " + std::to_string(d.tokens.size()) + " has an invalid type");
      d.tokens.push_back(std::move(piece));
      d.scores.push_back(score);
      d.types.push_back(type);
    } else if (f.number == 2 && f.wire == 2) {  // TrainerSpec: model_type=3 unk_id=40 bos_id=41 eos_id=42 pad_id=43
      for (WireReader m(f.data, f.size); !m.done();) {
        const auto g = m.next();
        if (g.wire != 0) continue;
        // UNIGRAM = 1 (BPE = 2). Only an explicit 1 counts: hand-made protos without a TrainerSpec stay "llama".
        if (g.number == 3) d.model = g.varint == 1 ? "t5" : "llama";
        else if (g.number == 40) unk = as_id(g.varint);
        else if (g.number == 41) bos = as_id(g.varint);
        else if (g.number == 42) eos = as_id(g.varint);
        else if (g.number == 43) pad = as_id(g.varint);
      }
    } else if (f.number == 3 && f.wire == 2) {
      // NormalizerSpec: precompiled_charsmap=2 add_dummy_prefix=3 remove_extra_whitespaces=4 (default true)
      d.remove_extra_whitespaces = true;
      for (WireReader m(f.data, f.size); !m.done();) {
        const auto g = m.next();
        if (g.number == 2 && g.wire == 2) d.precompiled_charsmap.assign(reinterpret_cast<const char*>(g.data), g.size);
        else if (g.number == 3 && g.wire == 0) d.add_space_prefix = g.varint != 0;
        else if (g.number == 4 && g.wire == 0) d.remove_extra_whitespaces = g.varint != 0;
      }
    }
  }
  // Defaults as in sentencepiece_model.proto (unk 0, bos 1, eos 2, pad -1).
  d.unk = unk == -2 ? 0 : unk;
  d.bos = bos == -2 ? 1 : bos;
  d.eos = eos == -2 ? 2 : eos;
  d.pad = pad == -2 ? -1 : pad;
  const int32_t n = static_cast<int32_t>(d.tokens.size());
  for (int32_t* id : {&d.unk, &d.bos, &d.eos, &d.pad})
    if (*id >= n || *id < -1) *id = -1;
  return d;
}

std::unique_ptr<Tokenizer> load_sentencepiece_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open SentencePiece model '" + path + "'");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return make_tokenizer(parse_sentencepiece_model(bytes.data(), bytes.size()));
  } catch (const Error& e) {
    fail(path + ": " + e.what());
  }
}

}  // namespace tinfer
