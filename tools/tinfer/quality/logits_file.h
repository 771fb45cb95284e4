// The base-run file of `tinfer ppl --save-logits` / `--kld-base`: the scored token stream, the
// tokenizer's fingerprint and, per scored position, the base run's log-probabilities, compactly.
//
// Format, version 1, all little-endian, no padding:
//   header  char magic[8] = "TINFKLD\0"; u32 version = 1; u32 row_width (logits per position);
//           u32 tok_n_vocab; i32 bos; i32 eos; u64 vocab_hash; u32 ctx; u32 stride;
//           u64 n_tokens; u64 n_records; u32 label_len                               (64 bytes)
//   label   label_len bytes (which model/path/KV type made the file; informational)
//   tokens  i32[n_tokens] (BOS + the encoded text, as scored)
//   records n_records × (20 + 2 × row_width) bytes, in scoring order:
//           u32 target (index into tokens of the token predicted); i32 argmax; f32 max_logp
//           (the argmax's log-probability); f64 nll (-log p(tokens[target]), exact, double);
//           u16 q[row_width]: log p_i = max_logp - q_i / 2048 (q clamped at 65535, i.e. 32 nats).
// vocab_hash is FNV-1a 64 over, for every token id in order, its piece's length (u32) and bytes.
//
// Why this encoding: a fixed absolute step of 2^-11 nats bounds every log-probability's error by
// 2^-12 = 2.4e-4 (fp16 log-probs err up to 1e-3 already at log p = -3). To first order the KL error
// is the covariance under p of that error and the log-ratio log p - log q, so it is at most
// 4.9e-4 × E_p|log p - log q|: ~1e-5 for runs that agree to KL ~1e-3, and ~1e-8 (quadratic) for a
// run against itself. Tokens 32 nats below the argmax (p < 1.3e-14) keep that floor. Half the size
// of fp32 rows (SmolLM2: 98 KB per position); the target's NLL and the argmax are stored exactly,
// so the base perplexity and top-1 agreement carry no quantization at all.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace tinfer {
class Tokenizer;
}

namespace tinfer::cli {

struct VocabFingerprint {
  uint32_t n_vocab = 0;
  int32_t bos = -1, eos = -1;
  uint64_t hash = 0;
  static VocabFingerprint of(const Tokenizer& tok);
  bool operator==(const VocabFingerprint&) const = default;
};

struct LogitsFileInfo {
  VocabFingerprint vocab;
  uint32_t row_width = 0;  // the model's n_vocab (logits per position)
  uint32_t ctx = 0, stride = 0;
  std::vector<int32_t> tokens;
  uint64_t n_records = 0;
  std::string label;
};

// One scored position of the base run, decoded.
struct LogitsRecord {
  uint32_t target = 0;
  int32_t argmax = 0;
  double nll = 0;
  std::vector<double> logp;  // renormalized log-probabilities decoded from the stored codes
};

class LogitsWriter {
 public:
  // Writes to PATH.tmp, renamed to PATH by finish(), so a failed run leaves no plausible file.
  LogitsWriter(const std::string& path, const LogitsFileInfo& info);
  ~LogitsWriter();  // removes PATH.tmp unless finish() succeeded
  LogitsWriter(const LogitsWriter&) = delete;
  LogitsWriter& operator=(const LogitsWriter&) = delete;
  // logp: the row's normalized log-probabilities (row_width), argmax its index.
  void write(uint32_t target, int32_t argmax, double nll, const double* logp);
  void finish();  // Error unless exactly n_records were written

 private:
  std::string path_;
  std::ofstream out_;
  LogitsFileInfo info_;
  uint64_t written_ = 0;
  bool finished_ = false;
  std::vector<uint16_t> q_;
};

class LogitsReader {
 public:
  // Validates the header, the file size against it and the tokens; Error naming the file otherwise.
  explicit LogitsReader(const std::string& path);
  const LogitsFileInfo& info() const { return info_; }
  // Reads the next record; Error if the stored target differs from `expected_target` or a field is invalid.
  void next(uint32_t expected_target, LogitsRecord& r);

 private:
  std::string path_;
  std::ifstream in_;
  LogitsFileInfo info_;
  uint64_t read_ = 0;
  std::vector<uint16_t> q_;
};

// Errors unless a run with this vocabulary and row width may be compared against `base`: same
// tokenizer (size, pieces, BOS/EOS) and as many logits per position.
void check_comparable(const LogitsFileInfo& base, const VocabFingerprint& now, int64_t row_width);
// Errors, naming the first differing index, unless the token streams are equal.
void check_same_tokens(const std::vector<int32_t>& base, const std::vector<int32_t>& now);

// --dump-logits (a test hook): raw fp32 rows as a NumPy .npy file [rows][cols], so an independent
// NumPy computation can check the statistics.
class NpyWriter {
 public:
  NpyWriter(const std::string& path, uint64_t rows, uint64_t cols);
  void row(const float* p, uint64_t n) { out_.write(reinterpret_cast<const char*>(p), std::streamsize(n * 4)); }
  void close();

 private:
  std::ofstream out_;
};

}  // namespace tinfer::cli
