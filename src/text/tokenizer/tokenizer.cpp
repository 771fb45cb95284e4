// Tokenizer entry points: load_tokenizer (GGUF metadata -> VocabData -> the kind's constructor),
// Tokenizer::decode, and Utf8Stream for streaming output.
#include "text/tokenizer/tokenizer.h"

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "text/tokenizer/unicode_util.h"
#include "text/tokenizer/vocab.h"

namespace tinfer {

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  std::string out;
  bool strip = adds_space_prefix();  // drop the dummy-prefix space of the first text token
  for (int32_t id : ids) {
    std::string b = token_bytes(id, render_special);
    if (b.empty()) continue;
    if (strip && b[0] == ' ') b.erase(0, 1);
    strip = false;
    out += b;
  }
  return out;
}

std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile& g) {
  VocabData d;
  const auto model = g.get_string("tokenizer.ggml.model");
  check(model.has_value(), "GGUF has no tokenizer (tokenizer.ggml.model missing)");
  d.model = *model;
  d.pre = g.get_string("tokenizer.ggml.pre").value_or("default");
  d.normalizer = g.get_string("tinfer.tokenizer.normalizer").value_or("");
  d.tokens = g.get_string_array("tokenizer.ggml.tokens");
  for (double s : g.get_float_array("tokenizer.ggml.scores")) d.scores.push_back(static_cast<float>(s));
  for (int64_t t : g.get_int_array("tokenizer.ggml.token_type")) {
    check(t >= INT32_MIN && t <= INT32_MAX, "invalid tokenizer.ggml.token_type value " + std::to_string(t));
    d.types.push_back(static_cast<int32_t>(t));
  }
  d.merges = g.get_string_array("tokenizer.ggml.merges");
  auto id = [&](const char* key, int32_t& dst) {
    if (auto v = g.get_int(std::string("tokenizer.ggml.") + key)) {
      // Converters write "none" as -1, some as uint32 0xFFFFFFFF.
      if (*v == -1 || *v == 0xFFFFFFFFll) dst = -1;
      else if (*v < 0 || *v > INT32_MAX) fail(std::string("tokenizer.ggml.") + key + " out of range: " + std::to_string(*v));
      else dst = static_cast<int32_t>(*v);
    }
  };
  for (int64_t e : g.get_int_array("tinfer.tokenizer.eog_token_ids")) {
    check(e >= 0 && e <= INT32_MAX, "tinfer.tokenizer.eog_token_ids value out of range: " + std::to_string(e));
    d.eog_ids.push_back(static_cast<int32_t>(e));
  }
  id("bos_token_id", d.bos);
  id("eos_token_id", d.eos);
  id("unknown_token_id", d.unk);
  id("eot_token_id", d.eot);
  id("eom_token_id", d.eom);
  id("padding_token_id", d.pad);
  const bool spm = d.model == "llama";
  if (spm && d.unk < 0) d.unk = 0;  // SentencePiece reserves id 0 for <unk>
  if (spm && d.bos < 0) d.bos = 1;
  if (spm && d.eos < 0) d.eos = 2;
  d.add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(spm);
  // t5 (unigram): SentencePiece's normaliser settings as llama.cpp's converter writes them; the dummy prefix is on
  // unless the file says otherwise, and the charsmap (bytes) goes to the kind, which refuses a non-empty one.
  const bool ugm = d.model == "t5";
  d.add_space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm || ugm);
  d.remove_extra_whitespaces = g.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false);
  if (ugm)
    for (int64_t b : g.get_int_array("tokenizer.ggml.precompiled_charsmap")) d.precompiled_charsmap.push_back(static_cast<char>(b));
  return make_tokenizer(std::move(d));
}

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  const size_t keep = unicode::incomplete_tail(pending_);
  const std::string_view ready(pending_.data(), pending_.size() - keep);
  // Re-encode the complete part so stray invalid bytes come out as U+FFFD, never raw.
  std::string out;
  out.reserve(ready.size());
  for (size_t i = 0; i < ready.size();) {
    const size_t at = i;
    const uint32_t cp = unicode::next_cp(ready, i);
    if (cp == 0xFFFD && i - at == 1) unicode::append_utf8(out, cp);
    else out.append(ready.substr(at, i - at));
  }
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string Utf8Stream::flush() {
  // What is pending is one unfinished sequence (at most 3 bytes): a single replacement character.
  std::string out = pending_.empty() ? std::string() : std::string("\xEF\xBF\xBD");
  pending_.clear();
  return out;
}

}  // namespace tinfer
