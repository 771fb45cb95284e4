// Test helper: a model's greedy continuation from BOS as text (CpuForward, 2 threads), for comparing two
// files of the same model (quantized vs source, .bin vs .gguf) or against a reference text.
#pragma once
#include <cstdint>
#include <string>

#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/session.h"
#include "engine/text_stream.h"
#include "backend/cpu/cpu_forward.h"
#include "model/model.h"

namespace tinfer::test {

inline std::string greedy_text(const Model& model, int n, int64_t ctx = 256) {
  ThreadPool pool(2);
  CpuForward fwd(model, pool);
  Session session(fwd, ctx);
  GenerateOptions opts;
  opts.max_tokens = n;
  opts.sampling.temperature = 0;
  std::string text;
  TextStream stream(model.tokenizer(), true);
  generate(session, model.tokenizer(), {model.tokenizer().bos()}, opts, [&](int32_t t) {
    text += stream.push(t);
    return true;
  });
  return text + stream.flush();
}

}  // namespace tinfer::test
