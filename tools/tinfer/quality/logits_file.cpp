// The base-run file of `tinfer ppl`; the format is described in logits_file.h.
#include "quality/logits_file.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "tinfer/error.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::cli {

namespace {
constexpr char kMagic[8] = {'T', 'I', 'N', 'F', 'K', 'L', 'D', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 64;
constexpr double kStep = 1.0 / 2048;  // nats per code
constexpr uint64_t kRecordFixed = 20;

uint64_t fnv1a(uint64_t h, const void* p, size_t n) {
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

template <class T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the supported hosts are little-endian
  s.append(b, sizeof(T));
}
template <class T>
T get(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}
}  // namespace

VocabFingerprint VocabFingerprint::of(const Tokenizer& tok) {
  VocabFingerprint f;
  f.n_vocab = uint32_t(tok.n_vocab());
  f.bos = tok.bos();
  f.eos = tok.eos();
  uint64_t h = 0xcbf29ce484222325ull;
  for (int32_t i = 0; i < tok.n_vocab(); ++i) {
    const std::string& p = tok.piece(i);
    const uint32_t len = uint32_t(p.size());
    h = fnv1a(h, &len, 4);
    h = fnv1a(h, p.data(), p.size());
  }
  f.hash = h;
  return f;
}

LogitsWriter::LogitsWriter(const std::string& path, const LogitsFileInfo& info)
    : path_(path), out_(path + ".tmp", std::ios::binary | std::ios::trunc), info_(info), q_(info.row_width) {
  check(bool(out_), "cannot write '" + path + ".tmp'");
  std::string h(kMagic, 8);
  put(h, kVersion);
  put(h, info.row_width);
  put(h, info.vocab.n_vocab);
  put(h, info.vocab.bos);
  put(h, info.vocab.eos);
  put(h, info.vocab.hash);
  put(h, info.ctx);
  put(h, info.stride);
  put(h, uint64_t(info.tokens.size()));
  put(h, info.n_records);
  put(h, uint32_t(info.label.size()));
  h += info.label;
  for (int32_t t : info.tokens) put(h, t);
  out_.write(h.data(), std::streamsize(h.size()));
}

LogitsWriter::~LogitsWriter() {
  if (finished_) return;
  out_.close();
  std::error_code ec;
  std::filesystem::remove(path_ + ".tmp", ec);
}

void LogitsWriter::write(uint32_t target, int32_t argmax, double nll, const double* logp) {
  check(written_ < info_.n_records, "internal: more records than announced in '" + path_ + "'");
  const double mx = logp[argmax];
  const float max_logp = float(mx);
  for (uint32_t i = 0; i < info_.row_width; ++i)
    q_[i] = uint16_t(std::min(65535.0, std::nearbyint((double(max_logp) - logp[i]) / kStep)));
  q_[argmax] = 0;
  std::string r;
  put(r, target);
  put(r, argmax);
  put(r, max_logp);
  put(r, nll);
  out_.write(r.data(), std::streamsize(r.size()));
  out_.write(reinterpret_cast<const char*>(q_.data()), std::streamsize(q_.size() * 2));
  ++written_;
}

void LogitsWriter::finish() {
  check(written_ == info_.n_records, "internal: wrote " + std::to_string(written_) + " of " +
                                         std::to_string(info_.n_records) + " records to '" + path_ + "'");
  out_.close();
  check(!out_.fail(), "error writing '" + path_ + ".tmp'");
  std::error_code ec;
  std::filesystem::rename(path_ + ".tmp", path_, ec);
  check(!ec, "cannot rename '" + path_ + ".tmp' to '" + path_ + "': " + ec.message());
  finished_ = true;
}

LogitsReader::LogitsReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
  const std::string what = "base logits file '" + path + "'";
  check(bool(in_), "cannot read " + what);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  check(!ec, "cannot read " + what + ": " + ec.message());
  char h[kHeaderBytes];
  check(size >= kHeaderBytes && in_.read(h, kHeaderBytes),
        what + " is truncated: " + std::to_string(size) + " bytes, shorter than the header");
  check(std::memcmp(h, kMagic, 8) == 0, what + " is not a tinfer logits file (bad magic)");
  const char* p = h + 8;
  const uint32_t version = get<uint32_t>(p);
  check(version == kVersion, what + " has format version " + std::to_string(version) + ", this build reads version " +
                                 std::to_string(kVersion));
  info_.row_width = get<uint32_t>(p);
  info_.vocab.n_vocab = get<uint32_t>(p);
  info_.vocab.bos = get<int32_t>(p);
  info_.vocab.eos = get<int32_t>(p);
  info_.vocab.hash = get<uint64_t>(p);
  info_.ctx = get<uint32_t>(p);
  info_.stride = get<uint32_t>(p);
  const uint64_t n_tokens = get<uint64_t>(p);
  info_.n_records = get<uint64_t>(p);
  const uint32_t label_len = get<uint32_t>(p);
  check(info_.row_width >= 1 && info_.row_width <= (1u << 24) && info_.vocab.n_vocab >= 1 &&
            info_.vocab.n_vocab <= info_.row_width && n_tokens >= 2 && n_tokens <= (1ull << 32) &&
            info_.n_records >= 1 && info_.n_records < n_tokens && info_.ctx >= 2 && info_.stride >= 1 &&
            info_.stride < info_.ctx && label_len <= 4096,
        what + " has an invalid header (sizes out of range)");
  const uint64_t expect =
      kHeaderBytes + label_len + 4 * n_tokens + info_.n_records * (kRecordFixed + 2ull * info_.row_width);
  check(size >= expect,
        what + " is truncated: " + std::to_string(size) + " bytes, the header announces " + std::to_string(expect));
  check(size == expect, what + " has " + std::to_string(size - expect) + " trailing bytes after its " +
                            std::to_string(info_.n_records) + " records");
  info_.label.resize(label_len);
  info_.tokens.resize(n_tokens);
  in_.read(info_.label.data(), label_len);
  in_.read(reinterpret_cast<char*>(info_.tokens.data()), std::streamsize(4 * n_tokens));
  check(bool(in_), "cannot read " + what);
  for (int32_t t : info_.tokens)
    check(t >= 0 && uint32_t(t) < info_.vocab.n_vocab, what + " holds a token id out of range: " + std::to_string(t));
  q_.resize(info_.row_width);
}

void LogitsReader::next(uint32_t expected_target, LogitsRecord& r) {
  const std::string what = "base logits file '" + path_ + "'";
  check(read_ < info_.n_records, what + " has fewer records than this run scores");
  char h[kRecordFixed];
  in_.read(h, kRecordFixed);
  in_.read(reinterpret_cast<char*>(q_.data()), std::streamsize(q_.size() * 2));
  check(bool(in_), "cannot read record " + std::to_string(read_) + " of " + what);
  const char* p = h;
  r.target = get<uint32_t>(p);
  r.argmax = get<int32_t>(p);
  const double max_logp = get<float>(p);
  r.nll = get<double>(p);
  check(r.target == expected_target, what + ": record " + std::to_string(read_) + " scores token " +
                                         std::to_string(r.target) + ", this run token " +
                                         std::to_string(expected_target));
  check(r.argmax >= 0 && uint32_t(r.argmax) < info_.row_width && q_[r.argmax] == 0 && max_logp <= 0 &&
            std::isfinite(max_logp) && std::isfinite(r.nll) && r.nll >= 0,
        what + ": record " + std::to_string(read_) + " is corrupt");
  r.logp.resize(info_.row_width);
  double sum = 0;
  for (uint32_t i = 0; i < info_.row_width; ++i) {
    r.logp[i] = max_logp - double(q_[i]) * kStep;
    sum += std::exp(r.logp[i] - max_logp);
  }
  const double lse = max_logp + std::log(sum);  // renormalize: the codes' rounding leaves sum p != 1
  for (double& x : r.logp) x -= lse;
  ++read_;
}

void check_comparable(const LogitsFileInfo& base, const VocabFingerprint& now, int64_t row_width) {
  check(base.vocab.n_vocab == now.n_vocab, "the base run's tokenizer has " + std::to_string(base.vocab.n_vocab) +
                                               " tokens, this model's " + std::to_string(now.n_vocab) +
                                               ": runs with different tokenizers cannot be compared");
  check(base.vocab == now,
        "the base run's tokenizer differs from this model's (vocabulary fingerprint or BOS/EOS ids): runs with "
        "different tokenizers cannot be compared");
  check(int64_t(base.row_width) == row_width, "the base run has " + std::to_string(base.row_width) +
                                                  " logits per position, this model " + std::to_string(row_width));
}

void check_same_tokens(const std::vector<int32_t>& base, const std::vector<int32_t>& now) {
  if (base == now) return;
  size_t i = 0;
  while (i < now.size() && i < base.size() && now[i] == base[i]) ++i;
  fail("the text's tokens differ from the base run's at index " + std::to_string(i) + " (" +
       std::to_string(now.size()) + " tokens here, " + std::to_string(base.size()) +
       " in the base): give the same -f/--max-bytes/--max-tokens, or omit -f to score the base's tokens");
}

NpyWriter::NpyWriter(const std::string& path, uint64_t rows, uint64_t cols)
    : out_(path, std::ios::binary | std::ios::trunc) {
  check(bool(out_), "cannot write '" + path + "'");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';  // header padded to 64 bytes, ends in '\n'
  dict += '\n';
  const uint16_t len = uint16_t(dict.size());
  out_.write("\x93NUMPY\x01\x00", 8);
  out_.write(reinterpret_cast<const char*>(&len), 2);
  out_.write(dict.data(), std::streamsize(dict.size()));
}

void NpyWriter::close() {
  out_.close();
  check(!out_.fail(), "error writing the --dump-logits file");
}

}  // namespace tinfer::cli
