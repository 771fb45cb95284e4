// run_load: the closed-loop client of an in-process engine.
#include "bench/bench_load.h"

#include <algorithm>

#include "core/timer.h"

namespace tinfer::cli {

LoadResult run_load(Engine& e, const Workload& w, int concurrency, const SamplingParams& sampling, int beams) {
  const int n = int(w.prompts.size());
  std::vector<Timing> t(n);
  int next = 0, in_flight = 0, done = 0;
  LoadResult r;
  double waste_sum = 0;
  int64_t waste_steps = 0;
  const double t0 = now_s();
  while (done < n) {
    while (next < n && (concurrency <= 0 || in_flight < concurrency)) {
      GenerationRequest g;
      g.prompt = w.prompts[next];
      g.max_tokens = w.output_lens[next];
      g.ignore_eos = true;  // lengths as drawn
      g.sampling = sampling;
      if (beams > 0) g.use_beam_search = true, g.n = beams;
      const int i = next++;
      const int g_n = g.n;
      t[i].submit = now_s();
      ++in_flight;
      e.add_request(std::move(g), [&, i, g_n](const TokenEvent& ev) {
        const double now = now_s();
        if (ev.has_token) {
          if (t[i].tokens++ == 0) t[i].first = now;
          t[i].last = now;
        }
        if (ev.finished && ++t[i].finished == g_n) --in_flight, ++done;  // every result of the request
      });
    }
    e.step();
    const EngineStats s = e.stats();
    const int64_t held = int64_t(s.kv_blocks_used) * e.config().kv.block_size;
    if (held > 0) waste_sum += double(s.kv_waste_slots) / double(held), ++waste_steps;
    r.peak_waste_slots = std::max(r.peak_waste_slots, s.kv_waste_slots);
  }
  r.wall_s = now_s() - t0;
  r.stats = e.stats();
  r.mean_waste = waste_steps ? waste_sum / double(waste_steps) : 0;
  for (int i = 0; i < n; ++i) {
    r.prompt_tokens += int64_t(w.prompts[i].size());
    r.gen_tokens += t[i].tokens;
    r.ttft.push_back(t[i].first - t[i].submit);
    r.e2e.push_back(t[i].last - t[i].submit);
    if (t[i].tokens > 1) r.tpot.push_back((t[i].last - t[i].first) / (t[i].tokens - 1));
  }
  return r;
}

}  // namespace tinfer::cli
