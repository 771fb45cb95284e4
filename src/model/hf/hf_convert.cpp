// Hugging Face checkpoint -> GGUF file (see hf_convert.h): the llama.cpp-layout view, checked like a model load,
// streamed through GgufWriter's declared tensors.
#include "model/hf/hf_convert.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"
#include "model/hf/hf_checkpoint.h"
#include "model/model.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

struct OutType {
  const char* name;
  DType type;
  uint32_t file_type;  // llama.cpp's general.file_type (llama_ftype)
};
constexpr OutType kOutTypes[] = {{"f32", DType::F32, 0}, {"f16", DType::F16, 1}, {"bf16", DType::BF16, 32}};

// The tensor's stored type in the output: 1-D tensors (norms, biases, rope factors) f32 as llama.cpp writes them,
// matrices the outtype (as-is: unchanged).
DType out_type_of(const GgufTensor& t, const OutType* out) {
  if (t.shape.size() <= 1) return DType::F32;
  return out ? out->type : t.type;
}

std::vector<uint8_t> converted(const GgufTensor& t, DType to) {
  if (to == t.type) return {t.data, t.data + t.bytes};
  std::vector<float> f(size_t(t.elements()));
  type_traits(t.type).to_float(t.data, f.data(), t.elements());
  std::vector<uint8_t> out(row_bytes(to, t.shape[0]) * size_t(t.elements() / t.shape[0]));
  type_traits(to).from_float(f.data(), out.data(), t.elements());
  return out;
}

}  // namespace

HfConvertReport convert_hf_checkpoint(const std::string& dir, const std::string& out_path, const std::string& outtype) {
  const OutType* out = nullptr;
  for (const OutType& o : kOutTypes)
    if (outtype == o.name) out = &o;
  check(out != nullptr || outtype == "as-is", "unknown --outtype '" + outtype + "' (f32, f16, bf16, as-is)");
  const GgufFile view = open_hf_checkpoint(dir, {.llama_cpp_layout = true});
  HfConvertReport r;
  r.arch = *view.get_string("general.architecture");
  if (const ArchSpec* arch = find_arch(r.arch)) {  // refuse what a load would refuse, before writing anything
    const ModelConfig cfg = read_model_config(view);
    arch->bind_tensors(view, cfg);
    const int32_t n = load_tokenizer(view)->n_vocab();
    check(n == cfg.n_vocab, "tokenizer has " + std::to_string(n) + " tokens but the model's vocabulary is " +
                                std::to_string(cfg.n_vocab));
    r.validated = true;
  }

  GgufWriter w;
  for (const auto& [key, value] : view.metadata()) w.set(key, value);
  if (out) w.set_u32("general.file_type", out->file_type);
  for (const GgufTensor& t : view.tensors()) w.declare_tensor(t.name, out_type_of(t, out), t.shape);

  const std::string tmp = out_path + ".part";
  {
    std::ofstream f(tmp, std::ios::binary);
    check(bool(f), "cannot write '" + tmp + "'");
    const std::vector<uint8_t> header = w.header_bytes();
    f.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size()));
    r.bytes_out = header.size();
    const std::vector<char> zeros(w.alignment(), 0);
    for (const GgufTensor& t : view.tensors()) {
      const std::vector<uint8_t> data = converted(t, out_type_of(t, out));
      f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
      const size_t pad = (w.alignment() - data.size() % w.alignment()) % w.alignment();
      f.write(zeros.data(), std::streamsize(pad));
      r.bytes_out += data.size() + pad;
      ++r.tensors;
    }
    check(bool(f.flush()), "cannot write '" + tmp + "'");
  }
  std::filesystem::rename(tmp, out_path);
  return r;
}

}  // namespace tinfer
