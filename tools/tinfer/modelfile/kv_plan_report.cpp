// kv-plan output. The table groups runs of layers with the same K/V types (one line for a uniform cache);
// the JSON lists every layer.
#include "modelfile/kv_plan_report.h"

#include <cstdarg>
#include <cstdio>

namespace tinfer::cli {

namespace {

std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// 1536 -> "1.50 KiB"; whole units up to GiB.
std::string human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return u == 0 ? fmt("%.0f B", bytes) : fmt("%.2f %s", bytes, units[u]);
}

long long ll(int64_t v) { return static_cast<long long>(v); }

const KvDtypeCapacity* f16_row(const KvCapacityReport& r) {
  for (const KvDtypeCapacity& c : r.by_dtype)
    if (c.type == KvDtype::f16) return &c;
  return nullptr;
}

// Concurrent sequences relative to f16's in the same budget; < 0 when f16 fits none.
double x_f16(const KvCapacityReport& r, const KvDtypeCapacity& c) {
  const KvDtypeCapacity* f = f16_row(r);
  return f && f->max_concurrency > 0 ? double(c.max_concurrency) / f->max_concurrency : -1.0;
}

// The engine names an explicit budget by its own flag (--kv-memory); this tool's is --memory.
std::string budget_how(const KvCapacityReport& r) { return r.budget.how == "--kv-memory" ? "--memory" : r.budget.how; }

}  // namespace

std::string kv_plan_table(const ModelShape& s, const KvCapacityReport& r) {
  const ModelConfig& c = s.config;
  const kv::KvMemoryPlan& p = r.plan;
  std::string o;
  const bool named = c.name.empty() || s.source.find(c.name) != std::string::npos;
  o += fmt("model        %s%s\n", s.source.c_str(), named ? "" : (" (" + c.name + ")").c_str());
  o +=
      fmt("shape        %lld layers, %lld heads, %lld kv heads, head_dim %lld, hidden %lld, ffn %lld, vocab %lld, "
          "context %lld\n",
          ll(c.n_layers), ll(c.n_heads), ll(c.n_kv_heads), ll(c.head_dim), ll(c.dim), ll(c.ffn_dim), ll(c.n_vocab),
          ll(c.ctx_len));
  o += fmt("weights      %s%s (%lld bytes, %s, %lld params)\n", s.weight_bytes_exact ? "" : "~",
           human(double(s.weight_bytes)).c_str(), ll(s.weight_bytes), s.weight_type.c_str(), ll(s.params));
  const std::string how = budget_how(r);
  o += fmt("budget       %s (%lld bytes), sized by %s\n", human(double(r.budget.budget_bytes)).c_str(),
           ll(int64_t(r.budget.budget_bytes)), how.c_str());
  if (r.budget.mem_available > 0)
    o += fmt("memory       %s MemAvailable now less the weights (what the engine reads once they are packed)\n",
             human(double(r.budget.mem_available)).c_str());
  o += fmt("KV types     %s, block %d tokens, context %d\n", r.precision.describe().c_str(), p.block_size,
           p.context_len);
  o += "layers       K type  K bytes/token  V type  V bytes/token  bytes/token  bytes/block\n";
  for (size_t a = 0; a < r.layers.size();) {
    size_t b = a + 1;
    while (b < r.layers.size() && r.layers[b].types == r.layers[a].types) ++b;
    const KvLayerBytes& l = r.layers[a];
    const std::string range = b - a == 1 ? fmt("%zu", a) : fmt("%zu-%zu", a, b - 1);
    const int64_t tok = l.k_bytes_per_token + l.v_bytes_per_token;
    o += fmt("  %-10s %-6s  %13lld  %-6s  %13lld  %11lld  %11lld\n", range.c_str(), kv_dtype_name(l.types.k),
             ll(l.k_bytes_per_token), kv_dtype_name(l.types.v), ll(l.v_bytes_per_token), ll(tok),
             ll(tok * p.block_size));
    a = b;
  }
  o += fmt("per token    %zu bytes (%s), all layers, K and V, scales included\n", p.bytes_per_token,
           human(double(p.bytes_per_token)).c_str());
  o += fmt("per block    %zu bytes (%s)\n", p.bytes_per_block, human(double(p.bytes_per_block)).c_str());
  o += fmt("capacity     %d blocks = %lld tokens, %s used\n", p.num_blocks, ll(p.capacity_tokens),
           human(double(p.bytes_used)).c_str());
  o += fmt("sequences    %d at %d tokens (%d blocks each)\n", p.max_concurrency, p.context_len, p.blocks_per_seq);
  if (p.window_blocks > 0)
    o += fmt("window pool  %d blocks for the sliding-window layers (%zu bytes/token, windows of %d tokens, %d blocks "
             "per sequence at most, %s): the per-token figures above are the other layers'\n",
             p.window_blocks, p.window_bytes_per_token, p.window_tokens, p.window_blocks_per_seq,
             human(double(p.window_blocks) * p.block_size * double(p.window_bytes_per_token)).c_str());
  else if (p.window_release)
    o += fmt("window       every layer attends to the last %d tokens: blocks leaving the window return to the pool "
             "(%d blocks per sequence at most)\n", p.window_tokens, p.window_blocks_per_seq);
  o += fmt("\nsame budget, K = V:\n  type  bytes/token       tokens  seqs@%-6d  x f16\n", p.context_len);
  for (const KvDtypeCapacity& d : r.by_dtype) {
    const double x = x_f16(r, d);
    o += fmt("  %-4s  %11zu  %11lld  %11d  %5s\n", kv_dtype_name(d.type), d.bytes_per_token, ll(d.capacity_tokens),
             d.max_concurrency, x < 0 ? "-" : fmt("%.2f", x).c_str());
  }
  return o;
}

nlohmann::json kv_plan_json(const ModelShape& s, const KvCapacityReport& r) {
  using nlohmann::json;
  const ModelConfig& c = s.config;
  const kv::KvMemoryPlan& p = r.plan;
  json layers = json::array();
  for (size_t l = 0; l < r.layers.size(); ++l) {
    const KvLayerBytes& b = r.layers[l];
    const int64_t tok = b.k_bytes_per_token + b.v_bytes_per_token;
    layers.push_back({{"layer", l},
                      {"k_type", kv_dtype_name(b.types.k)},
                      {"v_type", kv_dtype_name(b.types.v)},
                      {"k_bytes_per_token", b.k_bytes_per_token},
                      {"v_bytes_per_token", b.v_bytes_per_token},
                      {"bytes_per_token", tok},
                      {"bytes_per_block", tok * p.block_size}});
  }
  json by_dtype = json::array();
  for (const KvDtypeCapacity& d : r.by_dtype) {
    const double x = x_f16(r, d);
    by_dtype.push_back({{"type", kv_dtype_name(d.type)},
                        {"bytes_per_token", d.bytes_per_token},
                        {"num_blocks", d.num_blocks},
                        {"capacity_tokens", d.capacity_tokens},
                        {"max_concurrency", d.max_concurrency},
                        {"x_f16", x < 0 ? json(nullptr) : json(x)}});
  }
  return {
      {"model",
       {{"source", s.source},
        {"name", c.name},
        {"layers", c.n_layers},
        {"heads", c.n_heads},
        {"kv_heads", c.n_kv_heads},
        {"head_dim", c.head_dim},
        {"hidden", c.dim},
        {"ffn", c.ffn_dim},
        {"vocab", c.n_vocab},
        {"context_length", c.ctx_len},
        {"params", s.params},
        {"weight_type", s.weight_type},
        {"weight_bytes", s.weight_bytes},
        {"weight_bytes_exact", s.weight_bytes_exact}}},
      {"budget", {{"bytes", r.budget.budget_bytes}, {"how", budget_how(r)}, {"mem_available", r.budget.mem_available}}},
      {"kv_types", r.precision.describe()},
      {"block_size", p.block_size},
      {"context", p.context_len},
      {"layers", layers},
      {"bytes_per_token", p.bytes_per_token},
      {"bytes_per_block", p.bytes_per_block},
      {"num_blocks", p.num_blocks},
      {"capacity_tokens", p.capacity_tokens},
      {"bytes_used", p.bytes_used},
      {"blocks_per_seq", p.blocks_per_seq},
      {"max_concurrency", p.max_concurrency},
      {"window", {{"tokens", p.window_tokens},
                  {"release", p.window_release},
                  {"pool_blocks", p.window_blocks},
                  {"pool_bytes_per_token", p.window_bytes_per_token},
                  {"blocks_per_seq", p.window_blocks_per_seq}}},
      {"by_dtype", by_dtype},
  };
}

}  // namespace tinfer::cli
