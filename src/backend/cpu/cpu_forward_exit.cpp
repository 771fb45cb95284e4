// CpuForward's step slots and per-token early exit (tinfer/early_exit.h): which rows may exit, the exit head at
// an exit layer, moving exited rows behind the running ones, and the final head over the rows left.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "backend/cpu/cpu_forward.h"

namespace tinfer {

void CpuForward::set_early_exit(EarlyExit exit) {
  const int64_t L = config().n_layers;
  check(exit.threshold >= 0.0f && exit.threshold <= 1.0f,
        "early exit threshold must be in [0, 1], got " + std::to_string(exit.threshold));
  exit.layers = exit.layers_for(L);
  for (size_t i = 0; i < exit.layers.size(); ++i) {
    check(exit.layers[i] >= 1 && exit.layers[i] <= L - 1, "exit layer " + std::to_string(exit.layers[i]) +
                                                              " outside [1, " + std::to_string(L - 1) +
                                                              "] (layers run before the exit head)");
    check(i == 0 || exit.layers[i] > exit.layers[i - 1], "exit layers must be ascending and distinct");
  }
  exit_ = std::move(exit);
  if (exit_counters_.exited_after.size() != size_t(L)) exit_counters_.exited_after.assign(size_t(L), 0);  // keeps counts
}

EarlyExitCounters CpuForward::early_exit_counters() const { return exit_counters_; }

void CpuForward::begin_slots(const ForwardBatch& batch, bool exits) {
  const int64_t n = int64_t(batch.tokens.size());
  slot_pos_.assign(batch.positions.begin(), batch.positions.end());
  att_tables_.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) att_tables_[size_t(i)] = batch.block_tables[size_t(batch.seq[size_t(i)])].data();
  att_window_tables_.resize(batch.window_tables.empty() ? 0 : size_t(n));
  for (size_t i = 0; i < att_window_tables_.size(); ++i)
    att_window_tables_[i] = batch.window_tables[size_t(batch.seq[i])].data();
  slot_row_.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) slot_row_[size_t(i)] = int32_t(i);
  slot_logit_.assign(size_t(n), -1);
  if (!exits) return;
  // A row may exit when the caller marks its sequence (a lone decode token: prompt tokens, whose KV later
  // prefills would compute at full depth, never exit), its logits are wanted, and it is its sequence's only row
  // (a prefill chunk's other rows, or a verify row's neighbours, need this row's every layer anyway).
  if (batch.may_exit.empty()) return;
  std::vector<int32_t> rows_of_seq(batch.block_tables.size(), 0);
  for (int32_t s : batch.seq) ++rows_of_seq[size_t(s)];
  for (size_t r = 0; r < batch.logit_rows.size(); ++r) {
    const int32_t row = batch.logit_rows[r], s = batch.seq[size_t(row)];
    if (rows_of_seq[size_t(s)] == 1 && size_t(s) < batch.may_exit.size() && batch.may_exit[size_t(s)])
      slot_logit_[size_t(row)] = int32_t(r), ++exit_counters_.eligible;
  }
}

int64_t CpuForward::exit_check(int64_t layer, int64_t na, float* logits) {
  const ModelConfig& c = config();
  const int64_t dim = c.dim, V = c.n_vocab;
  std::vector<int32_t> cand;  // active slots that may exit
  for (int64_t s = 0; s < na; ++s)
    if (slot_logit_[size_t(s)] >= 0) cand.push_back(int32_t(s));
  if (cand.empty()) return na;
  const int64_t k = int64_t(cand.size());
  if (int64_t(exit_hidden_.size()) < k * dim) exit_hidden_.resize(size_t(k * dim));
  if (int64_t(exit_logits_.size()) < k * V) exit_logits_.resize(size_t(k * V));
  {
    OpTimer t(&profile_, Op::kExitHead);
    for (int64_t j = 0; j < k; ++j)
      rmsnorm(&x_[size_t(cand[size_t(j)]) * dim], output_norm_.data(), &exit_hidden_[size_t(j * dim)], dim, c.rms_eps);
  }
  matmul(output_, exit_hidden_.data(), k, exit_logits_.data(), pool_, &profile_, Op::kExitHead, act_quant_);
  std::vector<uint8_t> leaves(size_t(na), 0);
  {
    OpTimer t(&profile_, Op::kExitHead);
    std::vector<float> top(static_cast<size_t>(k), 0.0f);
    pool_.parallel_for(k, 1, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {  // top-1 probability = 1 / sum exp(l - max)
        const float* row = &exit_logits_[size_t(j * V)];
        const float mx = *std::max_element(row, row + V);
        double sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += std::exp(double(row[v] - mx));
        top[size_t(j)] = float(1.0 / sum);
      }
    });
    for (int64_t j = 0; j < k; ++j) {
      if (!(top[size_t(j)] > exit_.threshold)) continue;
      const int32_t s = cand[size_t(j)];
      leaves[size_t(s)] = 1;
      std::memcpy(logits + int64_t(slot_logit_[size_t(s)]) * V, &exit_logits_[size_t(j * V)], size_t(V) * sizeof(float));
      ++exit_counters_.exited, ++exit_counters_.exited_after[size_t(layer)];
    }
  }
  // Stable partition of the active slots: the rows that stay first, then the ones leaving now, then [na, n).
  std::vector<int32_t> order;
  for (int64_t s = 0; s < na; ++s)
    if (!leaves[size_t(s)]) order.push_back(int32_t(s));
  const int64_t stay = int64_t(order.size());
  if (stay == na) return na;
  for (int64_t s = 0; s < na; ++s)
    if (leaves[size_t(s)]) order.push_back(int32_t(s));
  const int64_t n = int64_t(slot_row_.size());
  for (int64_t s = na; s < n; ++s) order.push_back(int32_t(s));
  auto permute = [&](auto& v) {
    auto old = v;
    for (size_t i = 0; i < order.size(); ++i) v[i] = old[size_t(order[i])];
  };
  permute(slot_pos_), permute(att_tables_), permute(slot_row_), permute(slot_logit_);
  if (!att_window_tables_.empty()) permute(att_window_tables_);
  for (int64_t i = 0; i < n; ++i)  // xb_ is free between layers
    std::memcpy(&xb_[size_t(i * dim)], &x_[size_t(order[size_t(i)]) * dim], size_t(dim) * sizeof(float));
  std::swap(x_, xb_);
  return stay;
}

void CpuForward::final_logits(const ForwardBatch& batch, int64_t na, float* logits) {
  const ModelConfig& c = config();
  const int64_t dim = c.dim, V = c.n_vocab, nl = int64_t(batch.logit_rows.size());
  if (nl == 0 || logits == nullptr) return;
  OpProfile* prof = &profile_;
  if (na == int64_t(slot_row_.size())) {  // no row exited: slots are the rows, written in place
    {
      OpTimer t(prof, Op::kNorm);
      for (int64_t r = 0; r < nl; ++r)
        rmsnorm(&x_[batch.logit_rows[r] * dim], output_norm_.data(), &hidden_[r * dim], dim, c.rms_eps);
    }
    matmul(output_, hidden_.data(), nl, logits, pool_, prof, Op::kLmHead, act_quant_);
    return;
  }
  // Some rows exited (their logits are written): the head over the rest, scattered to their output rows.
  std::vector<int32_t> slot_of_row(slot_row_.size());
  for (size_t s = 0; s < slot_row_.size(); ++s) slot_of_row[size_t(slot_row_[s])] = int32_t(s);
  std::vector<int64_t> out_rows;
  {
    OpTimer t(prof, Op::kNorm);
    for (int64_t r = 0; r < nl; ++r) {
      const int32_t s = slot_of_row[size_t(batch.logit_rows[r])];
      if (s >= na) continue;  // exited
      rmsnorm(&x_[size_t(s) * dim], output_norm_.data(), &hidden_[out_rows.size() * dim], dim, c.rms_eps);
      out_rows.push_back(r);
    }
  }
  const int64_t m = int64_t(out_rows.size());
  if (m == 0) return;
  if (int64_t(exit_logits_.size()) < m * V) exit_logits_.resize(size_t(m * V));
  matmul(output_, hidden_.data(), m, exit_logits_.data(), pool_, prof, Op::kLmHead, act_quant_);
  for (int64_t j = 0; j < m; ++j)
    std::memcpy(logits + out_rows[size_t(j)] * V, &exit_logits_[size_t(j * V)], size_t(V) * sizeof(float));
}

}  // namespace tinfer
