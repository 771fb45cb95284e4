// --quantize-on-load: the load-time quantized model against what `tinfer quantize` writes for the same type and
// method (plain RTN and importance-weighted RTN): every tensor's type, shape and bytes, the fingerprint, and the
// packed CPU path's logits, bit for bit; for a GGUF (bf16, f16, f32 sources, types whose block does not divide
// the rows, tied and untied heads) and a Hugging Face directory. Then the refusals (an already quantized source,
// unknown and float type names), the flags through the CLI (load_model_file, engine_config's transform, an
// unreadable calibration file) and the Engine path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "tinfer/engine.h"
#include "tinfer/error.h"
#include "backend/cpu/cpu_forward.h"
#include "cli/args.h"
#include "cli/common.h"
#include "cli/engine_flags.h"
#include "cli/quantize_flags.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "model/hf/hf_checkpoint.h"
#include "model/model.h"
#include "model/model_identity.h"
#include "model/synth/synth.h"
#include "model/synth/synth_hf.h"
#include "quant/type_table.h"
#include "quantize/load_quantize.h"
#include "quantize/quantize_model.h"

namespace tinfer {
namespace {

using D = DType;

SynthSpec spec_of(D weights, int64_t dim, int64_t ffn, bool tied, uint64_t seed = 5) {
  SynthSpec s;
  s.dim = dim, s.n_layers = 2, s.n_heads = 4, s.n_kv_heads = 2, s.ffn_dim = ffn, s.n_vocab = 320, s.ctx_len = 64;
  s.weight_type = weights, s.seed = seed, s.weight_std = 0.08f, s.tied_embeddings = tied;
  return s;
}

QuantizeOptions quiet(D target) {
  QuantizeOptions o;
  o.target = target;
  o.threads = 2;
  o.log = nullptr;
  return o;
}

// The packed CPU path's logits after every token.
std::vector<float> cpu_logits(const Model& m, const std::vector<int32_t>& tokens) {
  ThreadPool pool(2);
  CpuForward fwd(m, pool);
  Session s(fwd, 64);
  std::vector<float> out;
  s.feed_all_logits(tokens, out);
  return out;
}

const std::vector<int32_t> kTokens = {1, 300, 45, 7, 260, 99, 3, 150, 222, 18, 77, 5};

// Every tensor of `mem` is the file's: name, type, shape, bytes.
void expect_same_tensors(const Model& file, const Model& mem) {
  const auto& a = file.gguf().tensors();
  const auto& b = mem.gguf().tensors();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].name);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].type, b[i].type);
    EXPECT_EQ(a[i].shape, b[i].shape);
    ASSERT_EQ(a[i].bytes, b[i].bytes);
    EXPECT_EQ(std::memcmp(a[i].data, b[i].data, a[i].bytes), 0);
  }
  EXPECT_EQ(file.gguf().metadata().size(), mem.gguf().metadata().size());
}

// quantize_model's file and quantize_on_load agree on `source` for `target` (opts as given): tensors, identity,
// logits of the packed path bit for bit; the quantized identity is not the float source's.
void expect_matches_file(const Model& source, QuantizeOptions opts, const std::string& out) {
  quantize_model(source, out, opts);
  auto file = Model::load(out);
  QuantizeResult res;
  auto mem = quantize_on_load(source, opts, &res);
  expect_same_tensors(*file, *mem);
  EXPECT_EQ(model_identity(*file).fingerprint, model_identity(*mem).fingerprint);
  EXPECT_NE(model_identity(source).fingerprint, model_identity(*mem).fingerprint);
  EXPECT_EQ(mem->path(), source.path());
  const std::vector<float> lf = cpu_logits(*file, kTokens), lm = cpu_logits(*mem, kTokens);
  ASSERT_EQ(lf.size(), lm.size());
  EXPECT_EQ(std::memcmp(lf.data(), lm.data(), lf.size() * sizeof(float)), 0);
  // The matrices did get the target (or its fallback): none is left float.
  for (const TensorResult& t : res.tensors) {
    if (t.shape.size() >= 2) {
      EXPECT_TRUE(t.type != D::F32 && t.type != D::F16 && t.type != D::BF16) << t.name;
    }
  }
}

struct Case {
  D weights, target;
  int64_t dim, ffn;
  bool tied;
};

TEST(QuantizeOnLoad, GgufMatchesTheQuantizeFileBitForBit) {
  const Case cases[] = {
      {D::BF16, D::Q8_0, 64, 96, false},   // every matrix q8_0
      {D::F16, D::Q4_K, 256, 512, true},   // q4_k mix: head/embd q6_k, attn_v / edge ffn_down q6_k
      {D::BF16, D::Q4_K, 64, 96, false},   // 64 and 96 are no 256-block: q4_k -> q5_0, q6_k -> q8_0 fallbacks
      {D::F32, D::Q4_0, 64, 96, true},     // 32-blocks, tied head
      {D::BF16, D::Q2_K, 256, 256, false}, // the smallest k-quant
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(type_traits(c.weights).name) + " -> " + target_type_name(c.target) + " dim " +
                 std::to_string(c.dim));
    test::TempDir dir("tinfer_qload");
    synthesize_model(spec_of(c.weights, c.dim, c.ffn, c.tied), dir.file("src.gguf"), 2);
    auto source = Model::load(dir.file("src.gguf"));
    expect_matches_file(*source, quiet(c.target), dir.file("out.gguf"));
  }
}

// With calibration tokens RTN is importance-weighted: the same bytes as quantize's file with the same tokens, and
// not plain RTN's.
TEST(QuantizeOnLoad, ImportanceWeightedMatchesTheQuantizeFile) {
  test::TempDir dir("tinfer_qload");
  synthesize_model(spec_of(D::BF16, 64, 96, false), dir.file("src.gguf"), 2);
  auto source = Model::load(dir.file("src.gguf"));
  QuantizeOptions o = quiet(D::Q4_0);
  for (int i = 0; i < 200; ++i) o.calib_tokens.push_back(int32_t(1 + (i * 37) % 319));
  o.calib.ctx = 64;
  expect_matches_file(*source, o, dir.file("out.gguf"));
  QuantizeResult weighted, plain;
  auto a = quantize_on_load(*source, o, &weighted);
  auto b = quantize_on_load(*source, quiet(D::Q4_0), &plain);
  EXPECT_EQ(weighted.method, "rtn (importance-weighted)");
  EXPECT_EQ(plain.method, "rtn");
  EXPECT_EQ(weighted.calib_tokens, 200);
  const GgufTensor* wa = a->gguf().tensor("blk.0.attn_q.weight");
  const GgufTensor* wb = b->gguf().tensor("blk.0.attn_q.weight");
  ASSERT_TRUE(wa && wb);
  EXPECT_NE(std::memcmp(wa->data, wb->data, wa->bytes), 0);
  EXPECT_NE(model_identity(*a).fingerprint, model_identity(*b).fingerprint);
}

// A Hugging Face directory (bf16 safetensors, q/k in HF's order) through the same path: the file quantize writes
// from the directory, bit for bit, and the quantized model's logits near the float model's.
TEST(QuantizeOnLoad, HuggingFaceDirectory) {
  test::TempDir dir("tinfer_qload");
  synthesize_hf_checkpoint(spec_of(D::BF16, 64, 96, false), dir.file("hf"), {.shards = 2});
  auto source = Model::load(dir.file("hf"));
  expect_matches_file(*source, quiet(D::Q8_0), dir.file("out.gguf"));
  auto q = quantize_on_load(*source, quiet(D::Q8_0));
  const std::vector<float> lf = cpu_logits(*source, kTokens), lq = cpu_logits(*q, kTokens);
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < lf.size(); ++i)
    max_diff = std::max<double>(max_diff, std::fabs(lf[i] - lq[i])), max_abs = std::max<double>(max_abs, std::fabs(lf[i]));
  EXPECT_GT(max_diff, 0);                // it is quantized
  EXPECT_LT(max_diff, 0.05 * max_abs);   // and still the same model
  EXPECT_EQ(q->chat_template(), source->chat_template());
  EXPECT_EQ(q->tokenizer().encode("hello world", true), source->tokenizer().encode("hello world", true));
}

TEST(QuantizeOnLoad, RefusesAnAlreadyQuantizedSource) {
  test::TempDir dir("tinfer_qload");
  synthesize_model(spec_of(D::Q8_0, 64, 96, false), dir.file("q8.gguf"), 2);
  auto source = Model::load(dir.file("q8.gguf"));
  try {
    quantize_on_load(*source, quiet(D::Q4_0));
    FAIL() << "a quantized source was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--quantize-on-load"), std::string::npos) << m;
    EXPECT_NE(m.find("already quantized (q8_0 x"), std::string::npos) << m;
    EXPECT_NE(m.find(dir.file("q8.gguf")), std::string::npos) << m;
    EXPECT_NE(m.find("tinfer quantize"), std::string::npos) << m;
  }
  EXPECT_THROW(quantize_on_load(*source, [] { auto o = quiet(D::Q4_0); o.method = QuantMethod::gptq; return o; }()),
               Error);
}

TEST(QuantizeOnLoad, TypeNames) {
  EXPECT_EQ(parse_load_quant_type("q8_0"), D::Q8_0);
  EXPECT_EQ(parse_load_quant_type("Q4_K"), D::Q4_K);
  EXPECT_EQ(parse_load_quant_type("q4_k_m"), D::Q4_K);
  const std::string names = load_quant_type_names();
  EXPECT_EQ(names, "q8_0|q6_k|q5_k|q5_1|q5_0|q4_k|q4_1|q4_0|q3_k|q2_k");
  for (const char* bad : {"q9_0", "f16", "bf16", "", "int8"}) {
    try {
      parse_load_quant_type(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  }
}

// ---- the flags, through the CLI ----

std::vector<char*> argv_of(std::vector<std::string>& words) {
  std::vector<char*> v;
  for (auto& w : words) v.push_back(w.data());
  return v;
}

cli::Args parse_args(std::vector<std::string> words, const std::vector<cli::OptionSpec>& spec) {
  std::vector<char*> v = argv_of(words);
  return cli::Args(int(v.size()), v.data(), spec, "test");
}

TEST(QuantizeOnLoadFlags, LoadModelFileAndErrors) {
  test::TempDir dir("tinfer_qload");
  synthesize_model(spec_of(D::BF16, 64, 96, false), dir.file("src.gguf"), 2);
  const auto spec = cli::model_options();
  auto plain = cli::load_model_file(parse_args({"-m", dir.file("src.gguf")}, spec));
  EXPECT_EQ(plain->gguf().tensor("blk.0.attn_q.weight")->type, D::BF16);
  auto q = cli::load_model_file(parse_args({"-m", dir.file("src.gguf"), "--quantize-on-load", "q8_0", "-t", "2"}, spec));
  EXPECT_EQ(q->gguf().tensor("blk.0.attn_q.weight")->type, D::Q8_0);
  EXPECT_TRUE(cli::int8_weights(*q));
  EXPECT_FALSE(cli::int8_weights(*plain));
  auto expect_error = [&](std::vector<std::string> words, const std::string& part) {
    try {
      cli::load_model_file(parse_args(std::move(words), spec));
      ADD_FAILURE() << "no error; expected one with '" << part << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error({"-m", dir.file("src.gguf"), "--quantize-on-load", "q7"}, "expected one of q8_0|q6_k");
  expect_error({"-m", dir.file("src.gguf"), "--quantize-on-load", "q8_0", "--quantize-calib", dir.file("none.txt")},
               "cannot read calibration file");
  std::vector<std::string> errs;
  cli::check_quantize_on_load(parse_args({"--quantize-calib", dir.file("src.gguf")}, spec), errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("needs --quantize-on-load"), std::string::npos);
  synthesize_model(spec_of(D::Q4_0, 64, 96, false), dir.file("q4.gguf"), 2);
  expect_error({"-m", dir.file("q4.gguf"), "--quantize-on-load", "q8_0"}, "is already quantized (q4_0 x");
}

// engine_config carries the transform, the Engine applies it (serve, bench throughput), and an invalid type is
// one of engine_config's listed problems.
TEST(QuantizeOnLoadFlags, EngineConfigAndEngine) {
  test::TempDir dir("tinfer_qload");
  synthesize_model(spec_of(D::BF16, 64, 96, false), dir.file("src.gguf"), 2);
  const auto spec = cli::concat(cli::model_options(), cli::engine_options());
  EngineConfig plain = cli::engine_config(parse_args({"-m", dir.file("src.gguf")}, spec));
  EXPECT_FALSE(plain.model_transform);
  EngineConfig c = cli::engine_config(
      parse_args({"-m", dir.file("src.gguf"), "--quantize-on-load", "q4_0", "--kv-memory", "4M", "-t", "2"}, spec));
  ASSERT_TRUE(c.model_transform);
  c.verbose = false;
  auto engine = Engine::create(c);
  GenerationRequest r;
  r.prompt = {1, 300, 45};
  r.ignore_eos = true;
  r.max_tokens = 4;
  r.sampling.temperature = 0;
  int tokens = 0;
  engine->add_request(std::move(r), [&](const TokenEvent& e) { tokens += e.has_token; });
  while (engine->has_work()) engine->step();
  EXPECT_EQ(tokens, 4);
  try {
    cli::engine_config(parse_args({"-m", dir.file("src.gguf"), "--quantize-on-load", "f32"}, spec));
    ADD_FAILURE() << "f32 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid engine options"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a quantized type"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tinfer
