// Per-token early exit in the fast forward (tinfer/early_exit.h), against the reference forward with the same
// state copying: threshold 1 never exits and is bit-identical to no early exit (and a threshold no token clears
// runs the exit heads yet changes nothing); threshold 0 exits every decode token at the first exit layer, its
// logits those of the head on the frozen stream and its deeper K/V filled from it, which later full-depth
// tokens attend to; a ragged batch (decode rows that exit and do not, a prefill chunk) equals each sequence
// alone; bad exit layers and thresholds are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "forward_test_util.h"
#include "backend/cpu/cpu_forward.h"
#include "backend/cpu/reference_forward.h"
#include "model/synth/synth.h"

namespace tinfer {
namespace {

using forward_test::nmse;
constexpr int64_t V = 300;

std::unique_ptr<Model> model4(DType type) {
  SynthSpec spec;
  spec.dim = 64, spec.n_layers = 4, spec.n_heads = 8, spec.n_kv_heads = 4, spec.head_dim = 8, spec.ffn_dim = 172;
  spec.n_vocab = V, spec.ctx_len = 128, spec.weight_type = type, spec.seed = 23, spec.weight_std = 0.08f;
  return Model::from_gguf_bytes(synthesize_model_bytes(spec));
}

int32_t tok(int i) { return (i * 37 + 5) % V; }

std::vector<float> row(const std::vector<float>& all, int64_t i) {
  return std::vector<float>(all.begin() + i * V, all.begin() + (i + 1) * V);
}

double top1_prob(const std::vector<float>& logits) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double s = 0;
  for (float l : logits) s += std::exp(double(l) - mx);
  return 1.0 / s;
}

// A prompt of 6 tokens fed at once, then `decode` tokens one per step: every step's logits, [6 + decode][V].
std::vector<float> prefill_then_decode(CpuForward& fwd, int decode) {
  Session s(fwd, 64);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 6; ++i) prompt.push_back(tok(i));
  std::vector<float> out;
  s.feed_all_logits(prompt, out, 6);
  for (int i = 6; i < 6 + decode; ++i) {
    const std::vector<float>& l = s.feed_token(tok(i));
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

TEST(EarlyExit, ThresholdOneNeverExitsAndIsBitIdentical) {
  ThreadPool pool(2);
  auto m = model4(DType::Q8_0);
  CpuForward plain(*m, pool);
  CpuForward off(*m, BackendOptions{.pool = &pool, .early_exit = EarlyExit{{2}, 1.0f}});
  const std::vector<float> want = prefill_then_decode(plain, 8);
  EXPECT_EQ(prefill_then_decode(off, 8), want);
  EXPECT_EQ(off.early_exit_counters().eligible, 0);
  // A threshold no token of this random model clears: the exit heads run on every decode row, nothing exits.
  CpuForward checked(*m, BackendOptions{.pool = &pool, .early_exit = EarlyExit{{1, 2, 3}, 0.999f}});
  EXPECT_EQ(prefill_then_decode(checked, 8), want);
  const EarlyExitCounters c = checked.early_exit_counters();
  EXPECT_EQ(c.eligible, 8);  // the decode steps; the prompt's rows run every layer
  EXPECT_EQ(c.exited, 0);
  EXPECT_DOUBLE_EQ(c.mean_layers(4), 4.0);
}

// Threshold 0: each decode token exits after layer 2 (the first exit layer). The reference freezes those
// positions' streams after 2 layers; later tokens (early exit off again) attend to their copied-state K/V.
TEST(EarlyExit, ThresholdZeroExitsAtTheFirstExitLayerWithStateCopying) {
  ThreadPool pool(2);
  auto m = model4(DType::F32);
  CpuForward fwd(*m, BackendOptions{.pool = &pool, .early_exit = EarlyExit{{2, 3}, 0.0f}});
  Session s(fwd, 64);
  std::vector<int32_t> t;
  for (int i = 0; i < 14; ++i) t.push_back(tok(i));
  std::vector<float> got;
  s.feed_all_logits(std::vector<int32_t>(t.begin(), t.begin() + 6), got, 6);  // prompt: every layer
  for (int i = 6; i < 11; ++i) {                                               // 5 decode tokens: exit after 2
    const std::vector<float>& l = s.feed_token(t[size_t(i)]);
    got.insert(got.end(), l.begin(), l.end());
  }
  const EarlyExitCounters c = fwd.early_exit_counters();
  EXPECT_EQ(c.eligible, 5);
  EXPECT_EQ(c.exited, 5);
  EXPECT_EQ(c.exited_after[2], 5);
  EXPECT_DOUBLE_EQ(c.mean_layers(4), 2.0);
  fwd.set_early_exit(EarlyExit{});
  for (int i = 11; i < 14; ++i) {  // full depth, attending to the exited tokens' layer-2 and -3 K/V
    const std::vector<float>& l = s.feed_token(t[size_t(i)]);
    got.insert(got.end(), l.begin(), l.end());
  }
  std::vector<int32_t> exit_after(14, 0);
  for (int i = 6; i < 11; ++i) exit_after[size_t(i)] = 2;
  const auto want = ReferenceForward(*m).logits(t, {}, exit_after);
  const auto full = ReferenceForward(*m).logits(t);
  for (size_t i = 0; i < t.size(); ++i) {
    SCOPED_TRACE("position " + std::to_string(i));
    EXPECT_LT(nmse(row(got, int64_t(i)), want[i]), 1e-9);
    if (i >= 6) {  // exiting (or attending to exited tokens) changed it
      EXPECT_GT(nmse(want[i], full[i]), 1e-6);
    }
  }
}

// One step over sequences a, b (decode, one row each) and c (a 4-token prefill chunk) with a threshold between
// a's and b's exit-head confidence: a exits, b does not, c runs every layer; each row equals its sequence alone.
TEST(EarlyExit, ExitInsideARaggedBatchEqualsOneSequenceAtATime) {
  ThreadPool pool(2);
  auto m = model4(DType::F32);
  const int bs = 16;
  const std::vector<std::vector<int32_t>> prompts = {{tok(1), tok(2), tok(3)}, {tok(9), tok(4)}, {}};
  const std::vector<std::vector<int32_t>> step = {{tok(7)}, {tok(11)}, {tok(5), tok(6), tok(8), tok(12)}};
  // The exit-head confidences after layer 2 of a's and b's step tokens (the reference, frozen after 2 layers).
  double p[2];
  for (int s = 0; s < 2; ++s) {
    std::vector<int32_t> seq = prompts[size_t(s)];
    seq.push_back(step[size_t(s)][0]);
    std::vector<int32_t> ex(seq.size(), 0);
    ex.back() = 2;
    p[s] = top1_prob(ReferenceForward(*m).logits(seq, {int64_t(seq.size()) - 1}, ex)[0]);
  }
  ASSERT_GT(std::abs(p[0] - p[1]), 1e-4) << p[0] << " " << p[1];
  const float threshold = float(0.5 * (p[0] + p[1]));
  const int exiting = p[0] > p[1] ? 0 : 1;

  // Runs the prompts (each alone, every layer), then the step with `together` sequences in one batch or one by one.
  auto run = [&](bool together) {
    CpuForward fwd(*m, BackendOptions{.pool = &pool});
    auto kv = fwd.allocate_kv(8, bs, KvDtype::f32);
    const std::vector<std::vector<int32_t>> tables = {{0}, {1}, {2}};
    for (int s = 0; s < 2; ++s) {
      ForwardBatch b;
      for (size_t i = 0; i < prompts[size_t(s)].size(); ++i)
        b.tokens.push_back(prompts[size_t(s)][i]), b.positions.push_back(int32_t(i)), b.seq.push_back(0);
      b.block_tables = {tables[size_t(s)]};
      fwd.forward(b, *kv, nullptr);
    }
    fwd.set_early_exit(EarlyExit{{2}, threshold});
    std::vector<float> out(3 * V);
    auto add = [&](ForwardBatch& b, int s) {
      const int32_t seq_index = int32_t(b.block_tables.size());
      b.block_tables.push_back(tables[size_t(s)]);
      for (size_t i = 0; i < step[size_t(s)].size(); ++i) {
        b.tokens.push_back(step[size_t(s)][i]);
        b.positions.push_back(int32_t(prompts[size_t(s)].size() + i));
        b.seq.push_back(seq_index);
      }
      b.logit_rows.push_back(int32_t(b.tokens.size()) - 1);
      b.may_exit.push_back(s < 2 ? 1 : 0);  // a and b decode; c's chunk is a prompt
    };
    if (together) {
      // The exiting sequence first, so that its slot moves behind c's chunk and the staying row (the
      // permutation of slots, streams and block tables runs).
      ForwardBatch b;
      const int order[3] = {exiting, 2, 1 - exiting};
      for (int s : order) add(b, s);
      std::vector<float> l(3 * V);
      fwd.forward(b, *kv, l.data());
      for (int k = 0; k < 3; ++k) std::copy(l.begin() + k * V, l.begin() + (k + 1) * V, out.begin() + order[k] * V);
    } else {
      for (int s = 0; s < 3; ++s) {
        ForwardBatch b;
        add(b, s);
        fwd.forward(b, *kv, out.data() + s * V);
      }
    }
    const EarlyExitCounters c = fwd.early_exit_counters();
    EXPECT_EQ(c.eligible, 2);  // a and b; c's chunk has 4 rows
    EXPECT_EQ(c.exited, 1);
    return out;
  };
  const std::vector<float> batched = run(true), alone = run(false);
  for (int s = 0; s < 3; ++s) EXPECT_LT(nmse(row(batched, s), row(alone, s)), 1e-10) << "sequence " << s;
  // The exiting row's logits are the exit head's; the other two the full model's.
  for (int s = 0; s < 2; ++s) {
    std::vector<int32_t> seq = prompts[size_t(s)];
    seq.push_back(step[size_t(s)][0]);
    std::vector<int32_t> ex(seq.size(), 0);
    if (s == exiting) ex.back() = 2;
    EXPECT_LT(nmse(row(batched, s), ReferenceForward(*m).logits(seq, {int64_t(seq.size()) - 1}, ex)[0]), 1e-9);
  }
}

TEST(EarlyExit, RefusesBadLayersAndThresholds) {
  ThreadPool pool(2);
  auto m = model4(DType::Q8_0);
  CpuForward fwd(*m, pool);
  EXPECT_THROW(fwd.set_early_exit(EarlyExit{{0}, 0.5f}), Error);     // no layer before the head
  EXPECT_THROW(fwd.set_early_exit(EarlyExit{{4}, 0.5f}), Error);     // that is the model's own head
  EXPECT_THROW(fwd.set_early_exit(EarlyExit{{2, 2}, 0.5f}), Error);  // not ascending
  EXPECT_THROW(fwd.set_early_exit(EarlyExit{{2}, 1.5f}), Error);
  EXPECT_THROW(fwd.set_early_exit(EarlyExit{{2}, -0.1f}), Error);
  fwd.set_early_exit(EarlyExit{{}, 0.5f});  // the default: two thirds of the depth
  EXPECT_EQ(fwd.early_exit().layers, std::vector<int32_t>{2});
  EXPECT_EQ(EarlyExit({}, 0.9f).layers_for(30), std::vector<int32_t>{20});
  EXPECT_EQ(EarlyExit({}, 0.9f).describe(30), "p>0.9 after 20");
  EXPECT_EQ(EarlyExit({}, 1.0f).describe(30), "off");
}

}  // namespace
}  // namespace tinfer
