// tokenizer.json (+ tokenizer_config.json, generation_config.json, config.json) -> VocabData; see hf_tokenizer.h.
#include "text/tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "tinfer/error.h"

namespace tinfer {

using nlohmann::json;

namespace {

constexpr const char* kMetaspace = "\xE2\x96\x81";  // U+2581

// Pre-tokenizer regexes of the byte-level families, as their tokenizer.json Split pre-tokenizers hold them, and the
// tokenizer.ggml.pre name llama.cpp gives each.
struct KnownPattern {
  const char* pre;
  const char* regex;
};
constexpr KnownPattern kPatterns[] = {
    {"llama-bpe",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+"},
    {"qwen2",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+"},
    {"gpt-2", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
};

json parse(const std::string& text, const char* file) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(std::string(file) + " is not valid JSON: " + e.what());
  }
}

std::string type_of(const json& j) { return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : ""; }

// A Sequence's members, or the one object; [] for null.
std::vector<json> members(const json& j, const char* list_key) {
  if (!j.is_object()) return {};
  if (type_of(j) == "Sequence" && j.contains(list_key) && j[list_key].is_array()) return j[list_key].get<std::vector<json>>();
  return {j};
}

bool flag(const json& j, const char* key, bool fallback) {
  return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
}

// The pre name of a byte-level BPE tokenizer from its pre-tokenizer chain.
std::string byte_level_pre(const json& pre_tok) {
  std::string regex;
  bool byte_level = false, byte_level_regex = false, digits = false;
  for (const json& p : members(pre_tok, "pretokenizers")) {
    const std::string t = type_of(p);
    if (t == "ByteLevel") {
      byte_level = true;
      byte_level_regex = flag(p, "use_regex", true);
      check(!flag(p, "add_prefix_space", true),
            "tokenizer.json: a ByteLevel pre-tokenizer with add_prefix_space = true is not supported");
    } else if (t == "Split") {
      check(p.contains("pattern") && p["pattern"].is_object() && p["pattern"].contains("Regex") &&
                p["pattern"]["Regex"].is_string(),
            "tokenizer.json: a Split pre-tokenizer without a Regex pattern is not supported");
      check(regex.empty(), "tokenizer.json: more than one Split pre-tokenizer is not supported");
      regex = p["pattern"]["Regex"].get<std::string>();
    } else if (t == "Digits") {
      digits = flag(p, "individual_digits", false);
      check(digits, "tokenizer.json: a Digits pre-tokenizer without individual_digits is not supported");
    } else {
      fail("tokenizer.json: pre-tokenizer '" + t + "' is not supported in a byte-level BPE tokenizer");
    }
  }
  check(byte_level, "tokenizer.json: byte-level BPE without a ByteLevel pre-tokenizer");
  if (regex.empty()) {
    check(byte_level_regex, "tokenizer.json: ByteLevel with use_regex = false and no Split pattern splits nothing");
    return digits ? "smollm" : "gpt-2";
  }
  check(!digits && !byte_level_regex, "tokenizer.json: a Split pattern combined with Digits or a regex ByteLevel is not supported");
  for (const KnownPattern& k : kPatterns)
    if (regex == k.regex) return k.pre;
  fail("tokenizer.json: unknown pre-tokenizer regex " + json(regex).dump() +
       " (known: the Llama 3, Qwen 2 and GPT-2 patterns)");
}

// Standard base64 (with or without padding); Error on any other character.
std::string base64_decode(const std::string& s) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else fail("tokenizer.json: precompiled_charsmap is not base64");
    acc = (acc << 6) | uint32_t(v), bits += 6;
    if (bits >= 8) bits -= 8, out += char((acc >> bits) & 0xFF);
  }
  return out;
}

// The Unicode normal form a tokenizer.json's normalizers ask for ("" none); any other normalizer type is left to the
// model kind's own check (`others` lists what it accepts besides these).
const char* const kUnicodeForms[][2] = {{"NFC", "nfc"}, {"NFKC", "nfkc"}, {"NFD", "nfd"}, {"NFKD", "nfkd"}};
std::string unicode_form(const json& root) {
  std::string form;
  for (const json& n : members(root.value("normalizer", json()), "normalizers"))
    for (const auto& [hf, ours] : kUnicodeForms)
      if (type_of(n) == hf) {
        check(form.empty() || form == ours, "tokenizer.json: two different Unicode normalizers");
        form = ours;
      }
  return form;
}
bool is_unicode_form(const std::string& t) {
  for (const auto& [hf, ours] : kUnicodeForms)
    if (t == hf) return true;
  return false;
}

// SentencePiece-style BPE: is a dummy-prefix space added? (Prepend("▁") normalizer, or a Metaspace pre-tokenizer
// whose prepend scheme is not "never".) Refuses normalizers that change text in other ways.
bool spm_space_prefix(const json& root) {
  bool replaces_space = false, prefix = false;
  for (const json& n : members(root.value("normalizer", json()), "normalizers")) {
    const std::string t = type_of(n);
    if (t == "Prepend" && n.value("prepend", "") == kMetaspace) prefix = true;
    else if (t == "Replace" && n.contains("pattern") && n["pattern"].value("String", "") == " " &&
             n.value("content", "") == kMetaspace)
      replaces_space = true;
    else if (!is_unicode_form(t))  // (VocabData::normalizer: applied before tokenizing)
      fail("tokenizer.json: normalizer '" + t + "' is not supported for SentencePiece-style BPE");
  }
  for (const json& p : members(root.value("pre_tokenizer", json()), "pretokenizers")) {
    const std::string t = type_of(p);
    check(t == "Metaspace", "tokenizer.json: pre-tokenizer '" + t + "' is not supported for SentencePiece-style BPE");
    check(p.value("replacement", kMetaspace) == std::string(kMetaspace), "tokenizer.json: Metaspace replacement must be U+2581");
    replaces_space = true;
    const std::string scheme = p.value("prepend_scheme", flag(p, "add_prefix_space", true) ? "always" : "never");
    prefix = prefix || scheme != "never";
  }
  check(replaces_space, "tokenizer.json: SentencePiece-style BPE without a space -> U+2581 replacement");
  return prefix;
}

// "a b" or ["a", "b"] -> the two parts.
std::pair<std::string, std::string> merge_parts(const json& m, size_t rank) {
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) return {m[0].get<std::string>(), m[1].get<std::string>()};
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t sp = s.find(' ', 1);
    if (sp != std::string::npos) return {s.substr(0, sp), s.substr(sp + 1)};
  }
  fail("tokenizer.json: merge #" + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]: " + m.dump());
}

// A token named in tokenizer_config.json: "text" or {"content": "text", ...}.
std::string token_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  return "";
}

// One id or a list of ids -> the list.
std::vector<int64_t> ids_of(const json& j) {
  std::vector<int64_t> out;
  if (j.is_number_integer()) out.push_back(j.get<int64_t>());
  if (j.is_array())
    for (const json& e : j)
      if (e.is_number_integer()) out.push_back(e.get<int64_t>());
  return out;
}

struct Builder {
  HfVocab out;
  std::unordered_map<std::string, int32_t> id_of;

  void put(int64_t id, const std::string& text, int32_t type, float score) {
    check(id >= 0 && id < (int64_t(1) << 24), "tokenizer.json: token id " + std::to_string(id) + " out of range");
    VocabData& d = out.vocab;
    if (size_t(id) >= d.tokens.size()) {
      for (size_t i = d.tokens.size(); i <= size_t(id); ++i) d.tokens.push_back("[PAD" + std::to_string(i) + "]");
      d.types.resize(d.tokens.size(), int32_t(TokenAttr::unused));
      d.scores.resize(d.tokens.size(), 0.0f);
    }
    d.tokens[size_t(id)] = text;
    d.types[size_t(id)] = type;
    d.scores[size_t(id)] = score;
    id_of[text] = int32_t(id);
  }
  int32_t find(const std::string& text) const {
    auto it = id_of.find(text);
    return it == id_of.end() ? -1 : it->second;
  }
};

// A BPE model's pieces, merges and pre-tokenizer/normalizer settings into b; returns the unk token's text ("" none).
std::string bpe_model(const json& root, Builder& b) {
  const json& model = root["model"];
  VocabData& d = b.out.vocab;
  bool byte_level = false;
  for (const json& p : members(root.value("pre_tokenizer", json()), "pretokenizers")) byte_level |= type_of(p) == "ByteLevel";
  const bool byte_fallback = flag(model, "byte_fallback", false);
  check(!(byte_level && byte_fallback), "tokenizer.json: byte-level BPE with byte_fallback is not supported");

  d.model = byte_level ? "gpt2" : "llama";
  const std::string unk = model.contains("unk_token") && model["unk_token"].is_string() ? model["unk_token"].get<std::string>() : "";
  for (const auto& [piece, id] : model["vocab"].items()) {
    check(id.is_number_integer(), "tokenizer.json: vocab entry '" + piece + "' has no integer id");
    int32_t type = int32_t(TokenAttr::normal);
    if (!byte_level && piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>') type = int32_t(TokenAttr::byte);
    if (!unk.empty() && piece == unk) type = int32_t(TokenAttr::unknown);
    b.put(id.get<int64_t>(), piece, type, 0.0f);
  }
  // Merges in rank order; a SentencePiece-style piece scores -(rank of its merge), so llama.cpp's score-ordered
  // merging follows HF's merge order.
  size_t rank = 0;
  for (const json& m : model["merges"]) {
    auto [l, r] = merge_parts(m, rank);
    d.merges.push_back(l + " " + r);
    if (!byte_level)
      if (int32_t id = b.find(l + r); id >= 0 && d.scores[size_t(id)] == 0.0f) d.scores[size_t(id)] = -float(rank + 1);
    ++rank;
  }
  d.normalizer = unicode_form(root);
  if (byte_level) {
    for (const json& n : members(root.value("normalizer", json()), "normalizers"))
      check(is_unicode_form(type_of(n)), "tokenizer.json: normalizer '" + type_of(n) + "' is not supported for byte-level BPE");
    d.pre = byte_level_pre(root["pre_tokenizer"]);
    d.scores.clear();
    d.add_space_prefix = false;
  } else {
    d.pre = "default";
    d.add_space_prefix = spm_space_prefix(root);
  }
  return unk;
}

// A Unigram model ("vocab": [[piece, log prob], ...], "unk_id", "byte_fallback") into b as model "t5"; returns the
// unk token's text. The text pipeline must be one the unigram kind reproduces exactly: ' ' -> U+2581 by a Replace
// normalizer or a Metaspace pre-tokenizer, a dummy prefix by Prepend("▁") or Metaspace's prepend_scheme. Unicode
// normalizers (NFC/NFKC..., a SentencePiece Precompiled charsmap) are applied by the unigram kind.
std::string unigram_model(const json& root, Builder& b) {
  const json& model = root["model"];
  VocabData& d = b.out.vocab;
  d.model = "t5";
  check(model.contains("vocab") && model["vocab"].is_array(), "tokenizer.json: Unigram model without a \"vocab\" list");
  const bool byte_fallback = flag(model, "byte_fallback", false);
  int64_t unk_id = -1;
  if (model.contains("unk_id") && !model["unk_id"].is_null()) {
    check(model["unk_id"].is_number_integer(), "tokenizer.json: Unigram unk_id is not an integer");
    unk_id = model["unk_id"].get<int64_t>();
    check(unk_id >= 0 && unk_id < int64_t(model["vocab"].size()), "tokenizer.json: Unigram unk_id " +
                                                                     std::to_string(unk_id) + " is not in the vocab");
  }
  int64_t id = 0;
  for (const json& e : model["vocab"]) {
    check(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(),
          "tokenizer.json: Unigram vocab entry #" + std::to_string(id) + " is not [piece, score]: " + e.dump());
    const std::string piece = e[0].get<std::string>();
    int32_t type = int32_t(TokenAttr::normal);
    if (byte_fallback && piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>') type = int32_t(TokenAttr::byte);
    if (id == unk_id) type = int32_t(TokenAttr::unknown);
    b.put(id++, piece, type, e[1].get<float>());
  }
  d.unk = int32_t(unk_id);

  bool replaces_space = false, prepends = false;
  for (const json& n : members(root.value("normalizer", json()), "normalizers")) {
    const std::string t = type_of(n);
    if (t == "Prepend" && n.value("prepend", "") == kMetaspace) {
      prepends = true;
    } else if (t == "Replace" && n.contains("pattern") && n["pattern"].value("String", "") == " " &&
               n.value("content", "") == kMetaspace) {
      replaces_space = true;
    } else if (t == "Precompiled") {  // SentencePiece's character map, base64 (the unigram kind applies it)
      const json& map = n.value("precompiled_charsmap", json());
      check(map.is_null() || map.is_string(), "tokenizer.json: Precompiled's precompiled_charsmap must be a string");
      if (map.is_string()) d.precompiled_charsmap = base64_decode(map.get<std::string>());
    } else if (!is_unicode_form(t)) {
      fail("tokenizer.json: normalizer '" + t + "' is not supported for Unigram");
    }
  }
  d.normalizer = unicode_form(root);
  d.pre = "default";
  d.add_space_prefix = prepends;
  for (const json& p : members(root.value("pre_tokenizer", json()), "pretokenizers")) {
    const std::string t = type_of(p);
    check(t == "Metaspace", "tokenizer.json: pre-tokenizer '" + t + "' is not supported for Unigram");
    check(p.value("replacement", kMetaspace) == std::string(kMetaspace), "tokenizer.json: Metaspace replacement must be U+2581");
    check(!prepends, "tokenizer.json: a Prepend normalizer and a Metaspace pre-tokenizer together are not supported");
    replaces_space = true;
    const std::string scheme = p.value("prepend_scheme", flag(p, "add_prefix_space", true) ? "always" : "never");
    check(scheme == "always" || scheme == "first" || scheme == "never", "tokenizer.json: unknown Metaspace prepend_scheme '" + scheme + "'");
    d.add_space_prefix = scheme != "never";
    d.pre = scheme == "first" ? "metaspace-first" : "metaspace";
    // split: Viterbi runs word by word (each U+2581 starts a word). The unigram kind segments whole fragments, the
    // same thing unless a piece holds U+2581 past its first character; such a vocabulary is refused.
    if (flag(p, "split", true))
      for (size_t i = 0; i < d.tokens.size(); ++i)
        check(d.types[i] != int32_t(TokenAttr::normal) || d.tokens[i].find(kMetaspace, 1) == std::string::npos,
              "tokenizer.json: Metaspace split with piece '" + d.tokens[i] + "' spanning words is not supported");
  }
  check(replaces_space, "tokenizer.json: Unigram without a space -> U+2581 replacement (Replace or Metaspace)");
  return unk_id >= 0 ? d.tokens[size_t(unk_id)] : std::string();
}

// Added tokens (tokenizer.json, then tokenizer_config.json's added_tokens_decoder): special -> control.
void add_added_tokens(const json& root, const json& tcfg, Builder& b) {
  const bool byte_level = b.out.vocab.model == "gpt2";
  auto add_token = [&](int64_t id, const std::string& text, bool special) {
    b.put(id, text, int32_t(special ? TokenAttr::control : TokenAttr::user_defined), byte_level ? 0.0f : -1000.0f);
  };
  if (root.contains("added_tokens") && root["added_tokens"].is_array())
    for (const json& t : root["added_tokens"]) {
      check(t.contains("id") && t["id"].is_number_integer() && t.contains("content") && t["content"].is_string(),
            "tokenizer.json: an added token needs \"id\" and \"content\"");
      add_token(t["id"].get<int64_t>(), t["content"].get<std::string>(), flag(t, "special", false));
    }
  if (tcfg.contains("added_tokens_decoder") && tcfg["added_tokens_decoder"].is_object())
    for (const auto& [id, t] : tcfg["added_tokens_decoder"].items())
      if (!token_text(t).empty() && id.find_first_not_of("0123456789") == std::string::npos && !id.empty())
        add_token(std::stoll(id), token_text(t), flag(t, "special", false));
}

// Special ids: tokenizer_config.json's texts, then config.json's ids; generation_config.json's eos ids.
void set_special_ids(const json& tcfg, const json& cfg, const json& gcfg, const std::string& unk, Builder& b) {
  VocabData& d = b.out.vocab;
  struct Special {
    const char* name;
    int32_t* id;
  };
  const Special specials[] = {{"bos", &d.bos}, {"eos", &d.eos}, {"unk", &d.unk}, {"pad", &d.pad}};
  for (const Special& s : specials) {
    const std::string key = std::string(s.name) + "_token";
    if (tcfg.contains(key)) *s.id = b.find(token_text(tcfg[key]));
    if (*s.id < 0 && cfg.contains(key + "_id"))
      if (auto ids = ids_of(cfg[key + "_id"]); !ids.empty() && ids[0] >= 0 && ids[0] < int64_t(d.tokens.size()))
        *s.id = int32_t(ids[0]);
  }
  if (d.unk < 0 && !unk.empty()) d.unk = b.find(unk);
  for (int64_t id : ids_of(gcfg.value("eos_token_id", json()))) {
    check(id >= 0 && id < int64_t(d.tokens.size()), "generation_config.json: eos_token_id " + std::to_string(id) + " out of range");
    if (d.eos < 0) d.eos = int32_t(id);
    else if (id != d.eos) d.eog_ids.push_back(int32_t(id));
  }
}

// add_bos_token: tokenizer_config.json, else whether the post-processor's single template starts with a special.
bool adds_bos(const json& root, const json& tcfg) {
  if (tcfg.contains("add_bos_token") && tcfg["add_bos_token"].is_boolean()) return tcfg["add_bos_token"].get<bool>();
  bool add_bos = false;
  for (const json& p : members(root.value("post_processor", json()), "processors"))
    if (type_of(p) == "TemplateProcessing" && p.contains("single") && p["single"].is_array() && !p["single"].empty())
      add_bos = p["single"][0].contains("SpecialToken");
  return add_bos;
}

// tokenizer_config.json's chat_template: one string, or a list of named templates ("default" is the template).
void read_chat_templates(const json& tcfg, HfVocab& out) {
  if (!tcfg.contains("chat_template")) return;
  const json& ct = tcfg["chat_template"];
  if (ct.is_string()) out.chat_template = ct.get<std::string>();
  if (ct.is_array())
    for (const json& t : ct) {
      const std::string name = t.value("name", ""), tmpl = t.value("template", "");
      if (name == "default") out.chat_template = tmpl;
      else if (!name.empty()) out.named_templates.emplace_back(name, tmpl);
    }
}

}  // namespace

HfVocab vocab_from_hf(const HfTokenizerFiles& files, int64_t n_vocab) {
  const json root = parse(files.tokenizer_json, "tokenizer.json");
  const json tcfg = files.tokenizer_config.empty() ? json::object() : parse(files.tokenizer_config, "tokenizer_config.json");
  const json gcfg = files.generation_config.empty() ? json::object() : parse(files.generation_config, "generation_config.json");
  const json cfg = files.config.empty() ? json::object() : parse(files.config, "config.json");
  check(root.is_object() && root.contains("model") && root["model"].is_object(), "tokenizer.json has no \"model\" object");
  const json& model = root["model"];
  const std::string mtype = type_of(model).empty() && model.contains("merges") ? "BPE" : type_of(model);
  check(mtype == "BPE" || mtype == "Unigram", "tokenizer.json: model type '" + mtype + "' is not supported (BPE, Unigram)");
  const bool unigram = mtype == "Unigram";
  Builder b;
  VocabData& d = b.out.vocab;
  std::string unk;
  if (unigram) {
    unk = unigram_model(root, b);
  } else {
    check(model.contains("vocab") && model["vocab"].is_object(), "tokenizer.json: BPE model without a \"vocab\" object");
    check(model.contains("merges") && model["merges"].is_array(), "tokenizer.json: BPE model without a \"merges\" list");
    unk = bpe_model(root, b);
  }
  add_added_tokens(root, tcfg, b);
  if (n_vocab > int64_t(d.tokens.size())) b.put(n_vocab - 1, "[PAD" + std::to_string(n_vocab - 1) + "]", int32_t(TokenAttr::unused), 0.0f);
  check(n_vocab <= 0 || int64_t(d.tokens.size()) == n_vocab,
        "tokenizer.json has " + std::to_string(d.tokens.size()) + " tokens, more than config.json's vocab_size " +
            std::to_string(n_vocab));

  set_special_ids(tcfg, cfg, gcfg, unk, b);
  d.add_bos = adds_bos(root, tcfg);
  read_chat_templates(tcfg, b.out);
  d.validate();
  return std::move(b.out);
}

}  // namespace tinfer
