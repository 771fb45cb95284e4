// Model loading: file format detection, architecture lookup, tensor binding, tokenizer.
#include "model/model.h"

#include <filesystem>
#include <fstream>

#include "tinfer/error.h"
#include "model/hf/hf_checkpoint.h"
#include "formats/llama2c.h"

namespace tinfer {

namespace {

bool has_gguf_magic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  check(bool(f), "cannot open model file '" + path + "'");
  char magic[4] = {};
  f.read(magic, 4);
  return f.gcount() == 4 && std::string(magic, 4) == "GGUF";
}

std::string default_llama2c_tokenizer(const std::string& model_path) {
  // llama2.c names its tokenizers tok<vocab>.bin; look beside the model.
  std::ifstream f(model_path, std::ios::binary);
  int32_t header[7] = {};
  f.read(reinterpret_cast<char*>(header), sizeof header);
  int32_t vocab = header[5] < 0 ? -header[5] : header[5];
  auto p = std::filesystem::path(model_path).parent_path() / ("tok" + std::to_string(vocab) + ".bin");
  return std::filesystem::exists(p) ? p.string() : std::string();
}

}  // namespace

ModelConfig read_model_config(const GgufFile& gguf) {
  auto arch_name = gguf.get_string("general.architecture");
  check(arch_name.has_value(), "missing metadata key 'general.architecture'");
  const ArchSpec* arch = find_arch(*arch_name);
  if (!arch) {
    std::string known;
    for (auto& a : known_archs()) known += (known.empty() ? "" : ", ") + a;
    fail("unknown architecture '" + *arch_name + "' (supported: " + known + ")");
  }
  return arch->read_config(gguf);
}

Model::Model(GgufFile gguf, std::string path) : gguf_(std::move(gguf)), path_(std::move(path)) {
  config_ = read_model_config(gguf_);
  const ArchSpec* arch = find_arch(*gguf_.get_string("general.architecture"));  // known: read_model_config checked
  tensors_ = arch->bind_tensors(gguf_, config_);
  tokenizer_ = load_tokenizer(gguf_);
  check(tokenizer_->n_vocab() == config_.n_vocab,
        "tokenizer has " + std::to_string(tokenizer_->n_vocab()) + " tokens but the model's vocabulary is " +
            std::to_string(config_.n_vocab));
}

std::unique_ptr<Model> Model::load(const std::string& path, const ModelLoadOptions& opts) {
  check(std::filesystem::exists(path), "model file '" + path + "' does not exist");
  try {
    // A directory is a Hugging Face checkpoint, read in place as a GGUF view (open_hf_checkpoint names what is missing).
    if (std::filesystem::is_directory(path)) return std::unique_ptr<Model>(new Model(open_hf_checkpoint(path), path));
    if (has_gguf_magic(path)) return std::unique_ptr<Model>(new Model(GgufFile::open(path), path));
    std::string tok = opts.tokenizer_path.empty() ? default_llama2c_tokenizer(path) : opts.tokenizer_path;
    check(!tok.empty(), "'" + path + "' is not GGUF; as a llama2.c model it needs a tokenizer (--tokenizer)");
    auto bytes = llama2c_to_gguf(path, tok);
    return std::unique_ptr<Model>(new Model(GgufFile::from_bytes(bytes.data(), bytes.size()), path));
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find(path) == std::string::npos) msg = path + ": " + msg;
    fail(msg);
  }
}

std::unique_ptr<Model> Model::from_gguf_bytes(const std::vector<uint8_t>& bytes) {
  return std::unique_ptr<Model>(new Model(GgufFile::from_bytes(bytes.data(), bytes.size()), "<memory>"));
}

std::unique_ptr<Model> Model::from_gguf(GgufFile gguf, std::string path) {
  return std::unique_ptr<Model>(new Model(std::move(gguf), std::move(path)));
}

std::string Model::chat_template() const { return gguf_.get_string("tokenizer.chat_template").value_or(""); }

size_t Model::weight_bytes() const {
  size_t total = 0;
  for (const auto& t : gguf_.tensors()) total += t.bytes;
  return total;
}

}  // namespace tinfer
