// The recipe: rule table, overrides and shape fallbacks.
//
// The rule table (kRecipe below). "head" is output.weight, or token_embd.weight when the model ties its
// output head to the embedding (no output.weight); "embd" is an untied token_embd.weight; "edge" layers
// are the first and last n_layers/8 blocks (at least one each), where ffn_down is most sensitive.
// 1-D tensors (norms, biases) are always f32; a tensor not named in a column gets the target type.
//
//   --type  | head  embd  | attn_v | attn_output | ffn_down edge | ffn_down other | file type
//   q2_k    | q6_k  q6_k  | q4_k   | q3_k        | q4_k          | q3_k           | MOSTLY_Q2_K (10)
//   q3_k    | q6_k  q6_k  | q5_k   | q4_k        | q5_k          | q4_k           | MOSTLY_Q3_K_M (12)
//   q4_k    | q6_k  q6_k  | q6_k   | q4_k        | q6_k          | q4_k           | MOSTLY_Q4_K_M (15)
//   q5_k    | q6_k  q6_k  | q6_k   | q5_k        | q6_k          | q5_k           | MOSTLY_Q5_K_M (17)
//   q6_k    | q6_k  q6_k  | q6_k   | q6_k        | q6_k          | q6_k           | MOSTLY_Q6_K (18)
//   q4_0    | q6_k  q6_k  | q5_0   | q4_0        | q5_0          | q4_0           | MOSTLY_Q4_0 (2)
//   q4_1    | q6_k  q6_k  | q5_1   | q4_1        | q5_1          | q4_1           | MOSTLY_Q4_1 (3)
//   q5_0    | q6_k  q6_k  | q8_0   | q5_0        | q8_0          | q5_0           | MOSTLY_Q5_0 (8)
//   q5_1    | q6_k  q6_k  | q8_0   | q5_1        | q8_0          | q5_1           | MOSTLY_Q5_1 (9)
//   q8_0    | every matrix q8_0                                                     | MOSTLY_Q8_0 (7)
//   f16/bf16/f32 | every matrix in that type                                        | 1 / 32 / 0
//
// Why: the output head and the embedding see every token and are a small share of a large model; V and
// the first/last ffn_down are where low-bit rounding costs the most perplexity (the usual _M mixes);
// attn_v is small under grouped-query attention, so raising it is cheap.
//
// Shape fallbacks (after the table and the overrides): a type whose block does not divide the row
// length gives way along q2_k/q3_k -> q4_0, q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0, and any 32-block
// type -> f16. A type named by --tensor-type never falls back: it is an error instead.
#include "quantize/recipe.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

struct RecipeRow {
  DType target;
  DType head, embd, attn_v, attn_output, ffn_down_edge, ffn_down;
};

using D = DType;
// clang-format off
constexpr RecipeRow kRecipe[] = {
    // target   head     embd     attn_v   attn_output ffn_down edge, other
    {D::Q2_K, D::Q6_K, D::Q6_K, D::Q4_K, D::Q3_K, D::Q4_K, D::Q3_K},
    {D::Q3_K, D::Q6_K, D::Q6_K, D::Q5_K, D::Q4_K, D::Q5_K, D::Q4_K},
    {D::Q4_K, D::Q6_K, D::Q6_K, D::Q6_K, D::Q4_K, D::Q6_K, D::Q4_K},
    {D::Q5_K, D::Q6_K, D::Q6_K, D::Q6_K, D::Q5_K, D::Q6_K, D::Q5_K},
    {D::Q6_K, D::Q6_K, D::Q6_K, D::Q6_K, D::Q6_K, D::Q6_K, D::Q6_K},
    {D::Q4_0, D::Q6_K, D::Q6_K, D::Q5_0, D::Q4_0, D::Q5_0, D::Q4_0},
    {D::Q4_1, D::Q6_K, D::Q6_K, D::Q5_1, D::Q4_1, D::Q5_1, D::Q4_1},
    {D::Q5_0, D::Q6_K, D::Q6_K, D::Q8_0, D::Q5_0, D::Q8_0, D::Q5_0},
    {D::Q5_1, D::Q6_K, D::Q6_K, D::Q8_0, D::Q5_1, D::Q8_0, D::Q5_1},
    {D::Q8_0, D::Q8_0, D::Q8_0, D::Q8_0, D::Q8_0, D::Q8_0, D::Q8_0},
};

struct TargetName {
  DType type;
  const char* name;
  uint32_t ftype;
  const char* ftype_name;
};
// In --help order. File types are llama.cpp's llama_ftype ids.
constexpr TargetName kTargets[] = {
    {D::Q8_0, "q8_0", 7, "MOSTLY_Q8_0"},     {D::Q6_K, "q6_k", 18, "MOSTLY_Q6_K"},
    {D::Q5_K, "q5_k", 17, "MOSTLY_Q5_K_M"},  {D::Q5_1, "q5_1", 9, "MOSTLY_Q5_1"},
    {D::Q5_0, "q5_0", 8, "MOSTLY_Q5_0"},     {D::Q4_K, "q4_k", 15, "MOSTLY_Q4_K_M"},
    {D::Q4_1, "q4_1", 3, "MOSTLY_Q4_1"},     {D::Q4_0, "q4_0", 2, "MOSTLY_Q4_0"},
    {D::Q3_K, "q3_k", 12, "MOSTLY_Q3_K_M"},  {D::Q2_K, "q2_k", 10, "MOSTLY_Q2_K"},
    {D::F16, "f16", 1, "MOSTLY_F16"},        {D::BF16, "bf16", 32, "MOSTLY_BF16"},
    {D::F32, "f32", 0, "ALL_F32"},
};
// clang-format on

const TargetName* find_target(DType t) {
  for (const TargetName& n : kTargets)
    if (n.type == t) return &n;
  return nullptr;
}

std::string type_list() {
  std::string s;
  for (const TargetName& n : kTargets) s += (s.empty() ? "" : ", ") + std::string(n.name);
  return s;
}

const char* type_name(DType t) { return target_type_name(t); }

// Elements per block of the GGUF types (ggml's facts; the type table has them too once a type is built in).
int64_t block_size(DType t) {
  switch (t) {
    case D::F32:
    case D::F16:
    case D::BF16:
      return 1;
    case D::Q2_K:
    case D::Q3_K:
    case D::Q4_K:
    case D::Q5_K:
    case D::Q6_K:
      return 256;
    default:
      return 32;
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The block index of "blk.N.xxx", or -1.
int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int64_t l = 0;
  size_t i = 4;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) l = l * 10 + (name[i] - '0');
  return i < name.size() && name[i] == '.' ? l : -1;
}

bool edge_layer(int64_t layer, int64_t n_layers) {
  if (layer < 0 || n_layers <= 0) return false;
  const int64_t e = std::max<int64_t>(1, n_layers / 8);
  return layer < e || layer >= n_layers - e;
}

}  // namespace

const char* target_type_name(DType t) {
  if (const TargetName* n = find_target(t)) return n->name;
  return "?";
}

int64_t TensorChoice::rows() const {
  int64_t r = 1;
  for (size_t i = 1; i < shape.size(); ++i) r *= shape[i];
  return r;
}
int64_t TensorChoice::elements() const { return shape.empty() ? 0 : shape[0] * rows(); }

const std::vector<DType>& quantize_target_types() {
  static const std::vector<DType> v = [] {
    std::vector<DType> out;
    for (const TargetName& n : kTargets) out.push_back(n.type);
    return out;
  }();
  return v;
}

DType parse_target_type(const std::string& name) {
  std::string s = name;
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (s == "q3_k_m" || s == "q4_k_m" || s == "q5_k_m") s.resize(s.size() - 2);  // the recipe is the _M mix
  for (const TargetName& n : kTargets)
    if (s == n.name) return n.type;
  fail("unknown type '" + name + "' (expected one of " + type_list() + ")");
}

TensorOverride parse_override(const std::string& arg) {
  const size_t eq = arg.rfind('=');
  check(eq != std::string::npos && eq > 0 && eq + 1 < arg.size(),
        "--tensor-type '" + arg + "': expected PATTERN=TYPE, e.g. attn_v=q8_0 or 'blk.0.*=f16'");
  TensorOverride o;
  o.pattern = arg.substr(0, eq);
  o.text = arg;
  try {
    o.type = parse_target_type(arg.substr(eq + 1));
  } catch (const Error& e) {
    fail("--tensor-type '" + arg + "': " + e.what());
  }
  return o;
}

bool pattern_matches(const std::string& pattern, const std::string& name) {
  if (pattern.find_first_of("*?[") != std::string::npos) return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  if (pattern.empty()) return false;
  // A run of whole dot-separated parts: "attn_v" and "blk.1" match "blk.1.attn_v.weight"; "output.weight"
  // does not match "blk.1.attn_output.weight", nor "blk.1" "blk.10.attn_v.weight".
  for (size_t at = name.find(pattern); at != std::string::npos; at = name.find(pattern, at + 1)) {
    const size_t end = at + pattern.size();
    const bool starts = at == 0 || name[at - 1] == '.' || pattern.front() == '.';
    const bool ends = end == name.size() || name[end] == '.' || pattern.back() == '.';
    if (starts && ends) return true;
  }
  return false;
}

uint32_t llama_file_type(DType target) {
  const TargetName* n = find_target(target);
  check(n != nullptr, "no GGUF file type for type id " + std::to_string(static_cast<uint32_t>(target)));
  return n->ftype;
}

const char* llama_file_type_name(DType target) {
  const TargetName* n = find_target(target);
  return n ? n->ftype_name : "?";
}

DType recipe_type(DType target, const std::string& name, const std::vector<int64_t>& shape, int64_t n_layers,
                  bool tied) {
  if (shape.size() < 2) return D::F32;
  const RecipeRow* row = nullptr;
  for (const RecipeRow& r : kRecipe)
    if (r.target == target) row = &r;
  if (!row) return target;  // f32 / f16 / bf16: every matrix in that type
  if (name == "output.weight" || (tied && name == "token_embd.weight")) return row->head;
  if (name == "token_embd.weight") return row->embd;
  if (ends_with(name, ".attn_v.weight")) return row->attn_v;
  if (ends_with(name, ".attn_output.weight")) return row->attn_output;
  if (ends_with(name, ".ffn_down.weight"))
    return edge_layer(layer_of(name), n_layers) ? row->ffn_down_edge : row->ffn_down;
  return target;
}

DType fallback_type(DType t, int64_t row_len) {
  for (;;) {
    if (row_len % block_size(t) == 0) return t;
    switch (t) {
      case D::Q2_K:
      case D::Q3_K:
        t = D::Q4_0;
        break;
      case D::Q4_K:
        t = D::Q5_0;
        break;
      case D::Q5_K:
        t = D::Q5_1;
        break;
      case D::Q6_K:
        t = D::Q8_0;
        break;
      default:
        t = D::F16;
        break;  // every float type holds any row length
    }
  }
}

std::vector<TensorChoice> plan_tensor_types(const GgufFile& file, DType target,
                                            const std::vector<TensorOverride>& overrides,
                                            std::vector<std::string>* warnings, bool allow_unbuilt_types) {
  int64_t n_layers = 0;
  bool tied = true;
  for (const GgufTensor& t : file.tensors()) {
    n_layers = std::max(n_layers, layer_of(t.name) + 1);
    if (t.name == "output.weight") tied = false;
  }
  std::vector<bool> used(overrides.size(), false);
  std::vector<TensorChoice> plan;
  for (const GgufTensor& t : file.tensors()) {
    TensorChoice c;
    c.name = t.name;
    c.shape = t.shape;
    c.source_type = t.type;
    const int64_t row_len = t.shape.empty() ? 0 : t.shape[0];
    if (t.shape.size() < 2) {  // norms and biases stay f32
      c.recipe_type = c.type = D::F32;
      c.origin = TypeOrigin::vector;
      plan.push_back(std::move(c));
      continue;
    }
    c.recipe_type = recipe_type(target, t.name, t.shape, n_layers, tied);
    const TensorOverride* ov = nullptr;
    for (size_t i = 0; i < overrides.size(); ++i)
      if (pattern_matches(overrides[i].pattern, t.name)) {
        ov = &overrides[i];  // later patterns win
        used[i] = true;
      }
    if (ov) {
      c.recipe_type = ov->type;
      c.origin = TypeOrigin::override;
      c.note = "--tensor-type " + ov->text;
      check(row_len % block_size(ov->type) == 0, "--tensor-type " + ov->text + ": tensor '" + t.name +
                                                     "' has rows of " + std::to_string(row_len) +
                                                     " elements, not a multiple of " + type_name(ov->type) +
                                                     "'s block of " + std::to_string(block_size(ov->type)));
    }
    c.type = fallback_type(c.recipe_type, row_len);
    if (c.type != c.recipe_type) {
      c.origin = TypeOrigin::fallback;
      c.note = std::string(type_name(c.recipe_type)) + " -> " + type_name(c.type) + ": rows of " +
               std::to_string(row_len) + " elements are not a multiple of " + type_name(c.recipe_type) +
               "'s block of " + std::to_string(block_size(c.recipe_type));
    }
    check(allow_unbuilt_types || find_type(c.type) != nullptr,
          std::string("type ") + type_name(c.type) + " (for tensor '" + t.name + "') is not available in this build");
    plan.push_back(std::move(c));
  }
  if (warnings)
    for (size_t i = 0; i < overrides.size(); ++i)
      if (!used[i]) warnings->push_back("--tensor-type " + overrides[i].text + " matches no matrix of the model");
  return plan;
}

}  // namespace tinfer
