// llama2.c .bin → GGUF: maps the checkpoint, checks its size against the header, slices the
// per-layer weight stacks in run.c's order and renames them to GGUF llama tensor names.
#include "formats/llama2c.h"

#include <climits>
#include <cstdlib>
#include <cstring>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "formats/mapped_file.h"

namespace tinfer {

namespace {

constexpr size_t kHeaderBytes = 7 * sizeof(int32_t);

Llama2cConfig parse_header(const MappedFile& m) {
  const std::string& path = m.path();
  if (m.size() < kHeaderBytes)
    fail("llama2.c checkpoint '" + path + "': file of " + std::to_string(m.size()) +
         " bytes is shorter than the 28-byte header");
  int32_t h[7];
  std::memcpy(h, m.data(), kHeaderBytes);
  Llama2cConfig c;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] == INT32_MIN ? 0 : std::abs(h[5]);  // INT32_MIN has no positive twin
  c.seq_len = h[6];
  auto bad = [&](const std::string& why) {
    fail("llama2.c checkpoint '" + path + "': " + why + " (header: dim=" + std::to_string(h[0]) +
         " hidden=" + std::to_string(h[1]) + " layers=" + std::to_string(h[2]) + " heads=" + std::to_string(h[3]) +
         " kv_heads=" + std::to_string(h[4]) + " vocab=" + std::to_string(h[5]) + " seq_len=" + std::to_string(h[6]) +
         ")");
  };
  if (c.dim <= 0 || c.hidden_dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.vocab_size <= 0 ||
      c.seq_len <= 0)
    bad("every header field must be positive");
  if (c.dim % c.n_heads != 0) bad("dim is not a multiple of the head count");
  if (c.n_heads % c.n_kv_heads != 0) bad("head count is not a multiple of the KV head count");
  if (c.head_size() % 2 != 0) bad("head size is odd (RoPE needs pairs)");

  // Expected float count in run.c's order; int64 arithmetic cannot overflow for int32 factors
  // below 2^21 each, so check the factors first.
  if (c.dim > (1 << 20) || c.hidden_dim > (1 << 20) || c.n_layers > 4096 || c.vocab_size > (1 << 22) ||
      c.seq_len > (1 << 24))
    bad("header values are implausibly large");
  const int64_t d = c.dim, hd = c.hidden_dim, L = c.n_layers, V = c.vocab_size;
  const int64_t kv_dim = int64_t(c.n_kv_heads) * c.head_size();
  int64_t floats = V * d + L * (2 * d + d * d * 2 + 2 * d * kv_dim + 3 * d * hd) + d +
                   int64_t(c.seq_len) * c.head_size() + (c.shared_classifier ? 0 : V * d);
  const uint64_t expect = kHeaderBytes + uint64_t(floats) * 4;
  if (m.size() != expect)
    bad("file size " + std::to_string(m.size()) + " bytes does not match the " + std::to_string(expect) +
        " bytes the header implies");
  return c;
}

// Tokenizer .bin: int32 max_token_length, then per token: float score, int32 length, bytes.
// llama2.c's exporter wrote SentencePiece's "▁" as ' ' and BOS/EOS as "\n<s>\n"/"\n</s>\n"; undo both.
void add_tokenizer(GgufWriter& w, const std::string& path, int32_t vocab) {
  MappedFile m = MappedFile::open(path);
  const uint8_t* p = m.data();
  size_t pos = 0, size = m.size();
  auto bad = [&](const std::string& why) {
    fail("llama2.c tokenizer '" + path + "': " + why + " at offset " + std::to_string(pos));
  };
  auto take = [&](void* dst, size_t n, const char* what) {
    if (n > size - pos) bad(std::string("truncated ") + what);
    std::memcpy(dst, p + pos, n);
    pos += n;
  };
  int32_t max_len = 0;
  take(&max_len, 4, "header");
  if (max_len <= 0) bad("max token length " + std::to_string(max_len) + " is not positive");
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int32_t i = 0; i < vocab; ++i) {
    float score = 0;
    int32_t len = 0;
    take(&score, 4, "score");
    take(&len, 4, "token length");
    if (len < 0 || len > max_len)
      bad("token " + std::to_string(i) + " length " + std::to_string(len) + " is out of range");
    std::string t(size_t(len), '\0');
    take(t.data(), size_t(len), "token bytes");
    if (t == "\n<s>\n") t = "<s>";
    if (t == "\n</s>\n") t = "</s>";
    std::string piece;
    for (char ch : t) piece += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
    // Token types as in llama.cpp's llama vocab: 1 normal, 2 unknown, 3 control, 6 byte.
    bool is_byte = piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>';
    types.push_back(i == 0 ? 2 : (i == 1 || i == 2) ? 3 : is_byte ? 6 : 1);
    tokens.push_back(std::move(piece));
    scores.push_back(score);
  }
  if (pos != size) bad("trailing bytes after " + std::to_string(vocab) + " tokens (vocab size from the checkpoint)");
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
}

}  // namespace

Llama2cConfig read_llama2c_config(const std::string& model_bin) { return parse_header(MappedFile::open(model_bin)); }

std::vector<uint8_t> llama2c_to_gguf(const std::string& model_bin, const std::string& tokenizer_bin) {
  MappedFile m = MappedFile::open(model_bin);
  const Llama2cConfig c = parse_header(m);
  const int64_t d = c.dim, hd = c.hidden_dim, V = c.vocab_size, hs = c.head_size();
  const int64_t q_dim = int64_t(c.n_heads) * hs, kv_dim = int64_t(c.n_kv_heads) * hs;

  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "llama");
  w.set_u32("llama.context_length", uint32_t(c.seq_len));
  w.set_u32("llama.embedding_length", uint32_t(d));
  w.set_u32("llama.feed_forward_length", uint32_t(hd));
  w.set_u32("llama.block_count", uint32_t(c.n_layers));
  w.set_u32("llama.attention.head_count", uint32_t(c.n_heads));
  w.set_u32("llama.attention.head_count_kv", uint32_t(c.n_kv_heads));
  w.set_u32("llama.rope.dimension_count", uint32_t(hs));
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  if (!tokenizer_bin.empty()) add_tokenizer(w, tokenizer_bin, c.vocab_size);

  // A cursor over the fp32 weights. Each llama2.c matrix (out, in) is row-major with rows of
  // `in` floats, which is GGUF shape {in, out} (shape[0] = row length) with the same bytes.
  const uint8_t* cur = m.data() + kHeaderBytes;
  auto take = [&](int64_t n) {
    const uint8_t* p = cur;
    cur += n * 4;
    return p;
  };
  auto add = [&](const std::string& name, const uint8_t* p, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    w.add_tensor(name, DType::F32, shape, p, size_t(n) * 4);
  };
  auto per_layer = [&](const char* suffix, int64_t in, int64_t out) {  // (layer, out, in) stack
    const uint8_t* base = take(c.n_layers * in * out);
    for (int l = 0; l < c.n_layers; ++l) {
      std::vector<int64_t> shape = out == 1 ? std::vector<int64_t>{in} : std::vector<int64_t>{in, out};
      add("blk." + std::to_string(l) + "." + suffix, base + size_t(l * in * out) * 4, shape);
    }
  };
  const uint8_t* embd = take(V * d);  // (vocab, dim)
  add("token_embd.weight", embd, {d, V});
  per_layer("attn_norm.weight", d, 1);        // rms_att_weight (layer, dim)
  per_layer("attn_q.weight", d, q_dim);       // wq (layer, n_heads*hs, dim)
  per_layer("attn_k.weight", d, kv_dim);      // wk (layer, n_kv_heads*hs, dim)
  per_layer("attn_v.weight", d, kv_dim);      // wv (layer, n_kv_heads*hs, dim)
  per_layer("attn_output.weight", q_dim, d);  // wo (layer, dim, n_heads*hs)
  per_layer("ffn_norm.weight", d, 1);         // rms_ffn_weight (layer, dim)
  per_layer("ffn_gate.weight", d, hd);        // w1 (layer, hidden, dim)
  per_layer("ffn_down.weight", hd, d);        // w2 (layer, dim, hidden)
  per_layer("ffn_up.weight", d, hd);          // w3 (layer, hidden, dim)
  add("output_norm.weight", take(d), {d});    // rms_final_weight (dim)
  take(int64_t(c.seq_len) * hs);              // freq_cis_real + freq_cis_imag (seq_len, hs/2) each: unused
  add("output.weight", c.shared_classifier ? embd : take(V * d), {d, V});  // wcls (vocab, dim)
  return w.to_bytes();
}

}  // namespace tinfer
