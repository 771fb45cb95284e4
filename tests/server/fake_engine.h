// A scripted Engine and a byte tokenizer for server tests: no model, deterministic tokens
// ('a' + position % 26 as byte tokens), max_seqs running at once, aborts and n samples as the real one.
#pragma once
#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "tinfer/error.h"
#include "text/tokenizer/tokenizer.h"
#include "tinfer/engine.h"

namespace tinfer::test {

// ids: 0 <unk>, 1 BOS, 2 EOS, 3 + b = byte b.
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool, std::span<const TextRange>) const override {
    std::vector<int32_t> ids;
    if (add_bos) ids.push_back(1);
    for (unsigned char c : text) ids.push_back(3 + c);
    return ids;
  }
  std::string token_bytes(int32_t id, bool render_special) const override {
    if (id >= 3) return std::string(1, static_cast<char>(id - 3));
    return render_special ? piece(id) : "";
  }
  int32_t n_vocab() const override { return 259; }
  int32_t bos() const override { return 1; }
  int32_t eos() const override { return 2; }
  bool is_eog(int32_t id) const override { return id == 2; }
  int32_t token_id(std::string_view) const override { return -1; }
  const std::string& piece(int32_t id) const override {
    static const std::string names[3] = {"<unk>", "<s>", "</s>"};
    static const std::string other = "?";
    return id >= 0 && id < 3 ? names[id] : other;
  }
  bool add_bos_by_default() const override { return true; }
};

class FakeEngine : public Engine {
 public:
  explicit FakeEngine(int max_seqs) {
    config_.scheduler.max_seqs = max_seqs;
    limits_ = RequestLimits{.n_vocab = tok_.n_vocab(), .max_len = 256, .max_seqs = max_seqs, .eos_ids = {2}};
  }
  void set_step_delay(std::chrono::microseconds d) { delay_ = d; }

  const RequestLimits& request_limits() const override { return limits_; }
  RequestId add_request(ResolvedRequest req, EventCallback cb) override {
    std::lock_guard<std::mutex> lk(mu_);
    RequestId id = ++next_;
    reqs_.emplace(id, Live{std::move(req), std::move(cb)});
    order_.push_back(id);
    return id;
  }
  void abort(RequestId id) override {
    std::lock_guard<std::mutex> lk(mu_);
    aborts_.push_back(id);
  }
  bool step() override {
    std::vector<std::pair<EventCallback, TokenEvent>> out;
    {
      std::lock_guard<std::mutex> lk(mu_);
      for (RequestId id : aborts_) {
        auto it = reqs_.find(id);
        if (it == reqs_.end()) continue;
        for (int i = 0; i < it->second.req.n; ++i) {
          TokenEvent e;
          e.id = id;
          e.index = i;
          e.finished = true;
          e.finish_reason = FinishReason::kAbort;
          out.emplace_back(it->second.cb, e);
        }
        erase(id);
        aborted_++;
      }
      aborts_.clear();
      int running = 0;
      for (RequestId id : std::vector<RequestId>(order_)) {
        if (running++ >= config_.scheduler.max_seqs) break;
        Live& l = reqs_.at(id);
        int k = l.generated++;
        for (int i = 0; i < l.req.n; ++i) {
          TokenEvent e;
          e.id = id;
          e.index = i;
          e.has_token = true;
          e.token = 3 + 'a' + k % 26;
          e.prompt_tokens = static_cast<int>(l.req.prompt.size());
          e.completion_tokens = k + 1;
          e.finished = k + 1 >= l.req.max_tokens;
          e.finish_reason = e.finished ? FinishReason::kLength : FinishReason::kNone;
          out.emplace_back(l.cb, e);
        }
        if (k + 1 >= l.req.max_tokens) erase(id);
      }
      steps_++;
    }
    std::this_thread::sleep_for(delay_);  // a forward pass takes time
    for (auto& [cb, e] : out) cb(e);
    return !out.empty();
  }
  bool has_work() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return !order_.empty() || !aborts_.empty();
  }
  EngineStats stats() const override {
    std::lock_guard<std::mutex> lk(mu_);
    EngineStats s;
    s.running = std::min<int>(static_cast<int>(order_.size()), config_.scheduler.max_seqs);
    s.waiting = static_cast<int>(order_.size()) - s.running;
    s.kv_blocks_total = 1000;
    s.kv_blocks_used = s.running;
    s.aborts = aborted_;
    s.steps = steps_;
    return s;
  }
  const Model& model() const override { fail("FakeEngine has no model"); }
  const Tokenizer& tokenizer() const override { return tok_; }
  const EngineConfig& config() const override { return config_; }
  int max_model_len() const override { return 256; }

 private:
  struct Live {
    ResolvedRequest req;
    EventCallback cb;
    int generated = 0;
    bool done = false;
  };
  void erase(RequestId id) {
    reqs_.erase(id);
    order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
  }
  mutable std::mutex mu_;
  EngineConfig config_;
  ByteTokenizer tok_;
  RequestLimits limits_;
  RequestId next_ = 0;
  std::map<RequestId, Live> reqs_;
  std::vector<RequestId> order_;  // admission order; the first max_seqs run
  std::vector<RequestId> aborts_;
  int64_t aborted_ = 0, steps_ = 0;
  std::chrono::microseconds delay_{0};
};

}  // namespace tinfer::test
