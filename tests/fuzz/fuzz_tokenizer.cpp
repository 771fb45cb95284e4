// libFuzzer target: arbitrary bytes through every tokenizer kind (SentencePiece BPE, byte-level BPE, unigram: encode
// with every flag, decode, streaming), the pre-tokenizers, the SentencePiece protobuf parser and chat templating.
// Vocabularies are built once: in code always, plus shared fixtures when $TINFER_SHARED/../shared has them.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "text/tokenizer/pretokenizer.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/unicode_util.h"
#include "text/tokenizer/vocab.h"

namespace {

using namespace tinfer;

VocabData code_spm() {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>", "<|user|>"};
  d.types = {2, 3, 3, 4};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    d.tokens.push_back(buf);
    d.types.push_back(6);
  }
  const std::string sp = "\xE2\x96\x81";
  for (const std::string& p : std::vector<std::string>{sp, sp + "a", "ab", sp + "ab", "b", "a", "c", "bc", "abc", sp + sp, "\xC3\xA9"}) {
    d.tokens.push_back(p);
    d.types.push_back(1);
  }
  for (size_t i = 0; i < d.tokens.size(); ++i) d.scores.push_back(-static_cast<float>(i % 7));
  d.unk = 0, d.bos = 1, d.eos = 2;
  return d;
}

VocabData code_bpe(const std::string& pre) {
  VocabData d;
  d.model = "gpt2";
  d.pre = pre;
  for (int b = 0; b < 256; ++b) d.tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
  d.types.assign(256, 1);
  d.tokens.push_back("<|endoftext|>");
  d.types.push_back(3);
  d.tokens.push_back("<|im_end|>");
  d.types.push_back(3);
  for (const std::string& m : std::vector<std::string>{"Ġ t", "h e", "Ġt he", "a a", "aa aa", "Ġ Ġ", "ĠĠ ĠĠ", "1 2", "Ã ©"}) {
    d.merges.push_back(m);
    const size_t s = m.find(' ');
    d.tokens.push_back(m.substr(0, s) + m.substr(s + 1));
    d.types.push_back(1);
  }
  d.eos = 256;
  d.add_bos = false;
  d.add_space_prefix = false;
  return d;
}

// Unigram ("t5"): pieces crossing U+2581, byte fallback, a user-defined piece; and the same without byte pieces
// (unknown runs -> <unk>) and with SentencePiece's whitespace clean-up and Metaspace prefix rules.
VocabData code_unigram(bool bytes, bool clean) {
  VocabData d = code_spm();
  d.model = "t5";
  if (!bytes)
    for (auto& t : d.types)
      if (t == 6) t = 5;  // unused: never matched, never a fallback
  d.remove_extra_whitespaces = clean;
  d.pre = clean ? "default" : "metaspace";
  d.tokens.push_back("a\xE2\x96\x81" "b");
  d.types.push_back(1);
  d.scores.push_back(-1.5f);
  return d;
}

struct Tokenizers {
  std::vector<std::unique_ptr<Tokenizer>> spm, bpe;  // bpe[i] for i < n_exact hold every byte
  size_t n_exact = 0;
  Tokenizers() {
    spm.push_back(make_spm_tokenizer(code_spm()));
    for (bool bytes : {true, false})
      for (bool clean : {true, false}) spm.push_back(make_unigram_tokenizer(code_unigram(bytes, clean)));
    for (const char* pre : {"gpt2", "smollm", "llama3"}) bpe.push_back(make_bpe_tokenizer(code_bpe(pre)));
    n_exact = bpe.size();  // SmolLM2's vocab lacks bytes never seen in UTF-8 (0xC0, 0xF5..): <unk>, lossy
    const char* env = std::getenv("TINFER_SHARED");
    const std::string shared = env && *env ? env : "../shared";
    try {
      if (std::filesystem::exists(shared + "/models/stories260K.gguf"))
        spm.push_back(load_tokenizer(GgufFile::open(shared + "/models/stories260K.gguf")));
      if (std::filesystem::exists(shared + "/models/llama2-tokenizer.model"))
        spm.push_back(load_sentencepiece_model(shared + "/models/llama2-tokenizer.model"));
      const char* model = std::getenv("TINFER_DEFAULT_MODEL");
      if (model && *model && std::filesystem::exists(model)) bpe.push_back(load_tokenizer(GgufFile::open(model)));
    } catch (const Error& e) {
      std::fprintf(stderr, "fuzz_tokenizer: shared fixtures not used: %s\n", e.what());
    }
  }
};

void check_round_trip(const Tokenizer& t, const std::string& text, bool exact) {
  for (int flags = 0; flags < 4; ++flags) {
    const auto ids = t.encode(text, flags & 1, flags & 2);
    for (int32_t id : ids)
      if (id < 0 || id >= t.n_vocab()) std::abort();
    const std::string back = t.decode(ids, flags & 2);
    // Byte-level BPE with every byte in its vocab is lossless for any input.
    if (exact && !(flags & 2) && back != text) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Tokenizers toks;
  const std::string text(reinterpret_cast<const char*>(data), size);

  for (const auto& t : toks.spm) check_round_trip(*t, text, false);
  for (size_t i = 0; i < toks.bpe.size(); ++i) check_round_trip(*toks.bpe[i], text, i < toks.n_exact);

  // Pre-tokenizers must cover the input exactly, in order, with non-empty words.
  for (PreTokenizer k : {PreTokenizer::gpt2, PreTokenizer::smollm, PreTokenizer::llama3, PreTokenizer::qwen2}) {
    std::vector<std::string_view> words;
    pre_tokenize(k, text, words);
    std::string joined;
    for (auto w : words) {
      if (w.empty()) std::abort();
      joined += w;
    }
    if (joined != text) std::abort();
  }

  // Decoding arbitrary (also out-of-range) ids, and streaming the bytes in uneven chunks.
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < size; i += 2) ids.push_back(static_cast<int16_t>(data[i] | (data[i + 1] << 8)));
  Utf8Stream stream;
  std::string streamed;
  for (const auto& t : toks.spm) {
    const std::string d = t->decode(ids, true);
    for (size_t i = 0; i < d.size(); i += 1 + (i % 5)) streamed += stream.push(std::string_view(d).substr(i, 1 + (i % 5)));
  }
  streamed += stream.flush();
  for (size_t i = 0; i < streamed.size();) {  // Utf8Stream output is always valid UTF-8
    const size_t at = i;
    if (unicode::next_cp(streamed, i) == 0xFFFD && i - at != 3) std::abort();
  }

  // The protobuf reader and chat templating see the same bytes.
  try {
    auto d = parse_sentencepiece_model(data, size);
    if (!d.tokens.empty() && d.tokens.size() < 4096) {
      make_spm_tokenizer(d)->encode("a b", true);
      make_unigram_tokenizer(std::move(d))->encode("a b", true);  // refuses a charsmap: Error
    }
  } catch (const Error&) {
  }
  try {  // most byte strings are not valid templates (fuzz_chat_template covers the interpreter)
    apply_chat_template(text, {{"system", text}, {"user", "hi"}}, true);
  } catch (const Error&) {
  }
  return 0;
}
