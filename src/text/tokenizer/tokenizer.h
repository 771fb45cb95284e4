// Tokenizer interface: SentencePiece-style BPE (`llama`), byte-level BPE (`gpt2`) and SentencePiece unigram (`t5`), built from
// GGUF metadata (or a SentencePiece .model protobuf, or a llama2.c tokenizer .bin).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tinfer {

class GgufFile;

// A byte range [begin, end) of a text.
struct TextRange {
  size_t begin = 0, end = 0;
};

enum class TokenAttr : int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes text. add_bos prepends BOS; parse_special lets control/user-defined token texts in
  // `text` (e.g. "<|im_start|>") map to their ids instead of being split as plain text -- except
  // where such a text overlaps a `literal` range (sorted, disjoint): chat message contents, which
  // must never forge the template's special tokens. Fragment boundaries are otherwise unchanged.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = false,
                                      std::span<const TextRange> literal = {}) const = 0;
  // The raw bytes a token stands for (byte tokens decoded, SentencePiece U+2581 -> ' ', gpt2 byte
  // mapping undone). Control tokens give "" unless render_special.
  virtual std::string token_bytes(int32_t id, bool render_special = false) const = 0;
  std::string decode(const std::vector<int32_t>& ids, bool render_special = false) const;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos() const = 0;  // -1 if none
  virtual int32_t eos() const = 0;  // -1 if none
  virtual bool is_eog(int32_t id) const = 0;  // end of generation (EOS, <|im_end|>, EOT ...)
  virtual int32_t token_id(std::string_view piece) const = 0;  // exact vocab piece -> id, -1 if absent
  virtual const std::string& piece(int32_t id) const = 0;      // vocab string as stored
  virtual bool add_bos_by_default() const = 0;
  // True when encode() puts a SentencePiece dummy-prefix space before the text; decode() then drops
  // one leading space so that decode(encode(s)) == s.
  virtual bool adds_space_prefix() const { return false; }
  // The most bytes of input one token can stand for, in any text or in `text` (only tokens made of bytes the text has
  // can occur in it); 0: no bound (a normaliser that deletes or collapses text, or input dropped or fused into one
  // <unk>). A text of B bytes encodes to at least B / this tokens: what lets a server refuse a prompt that cannot fit
  // its context before paying for its tokenization.
  virtual size_t max_bytes_per_token() const { return 0; }
  virtual size_t max_bytes_per_token_in(std::string_view text) const {
    (void)text;
    return max_bytes_per_token();
  }
};

// Builds the tokenizer named by tokenizer.ggml.model ("llama", "gpt2" or "t5"); Error otherwise.
std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile& gguf);
// SentencePiece model protobuf (e.g. llama2-tokenizer.model, tok512.model).
std::unique_ptr<Tokenizer> load_sentencepiece_model(const std::string& path);

// Incremental UTF-8 assembly for streaming: push token bytes, get back only complete characters.
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string flush();  // whatever is pending (invalid tails replaced by U+FFFD)

 private:
  std::string pending_;
};

// Chat formatting (chat_template.h has the parsed-once ChatTemplate these wrap).
struct ChatMessage {
  std::string role;
  std::string content;
  // Content sent as a list of text parts (OpenAI clients): templates that read parts
  // (`message['content'][0]['text']`) get the list, others `content` (the parts joined).
  std::vector<std::string> parts;
  bool content_null = false;  // content absent or null (an assistant turn holding only tool calls)
  std::string extra_json;     // further fields (tool_calls, tool_call_id, name) as a JSON object, or ""
};
// A rendered chat prompt: the template's text with each message's content at a `content` range.
struct ChatPrompt {
  std::string text;
  std::vector<TextRange> content;  // sorted, disjoint: bytes that came from the caller's data
};
// The model's template source (tokenizer.chat_template; "" for none: plain "role: content" lines),
// parsed on every call. Tools and servers parse once with ChatTemplate instead.
ChatPrompt render_chat(const std::string& tmpl, const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string apply_chat_template(const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);
// The chat prompt's token ids (BOS first when add_bos and the vocabulary has one): special tokens
// are recognised in the template's text only, message contents are always plain text.
std::vector<int32_t> encode_chat(const Tokenizer& tok, const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, bool add_bos);

}  // namespace tinfer
