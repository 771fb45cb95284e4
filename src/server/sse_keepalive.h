// When a stream may carry an SSE comment (": keep-alive"), for proxies that drop connections idle too long.
// Off unless `tinfer serve --sse-keepalive SECONDS` turns it on. Clients are not all as lenient as the SSE spec:
// vLLM's `bench serve` strips each network read and splits events on blank lines, so a comment read on its own
// loses its separator and the events glued onto it are lost; the OpenAI API sends no comments at all. Hence:
//   before the stream's first data event      never (a stream begins with "data: {")
//   after it, once nothing was written for    `period` seconds, at least kMinSseKeepaliveS (15 s)
// Vanished clients are detected without writing (peer_probe.h); this is never needed for that.
#pragma once
#include <chrono>

namespace tinfer::server {

// The smallest period --sse-keepalive accepts (smaller values are refused, not clamped: a setting that
// silently means something else hides a mistake).
inline constexpr double kMinSseKeepaliveS = 15;

class SseKeepalive {
 public:
  using Clock = std::chrono::steady_clock;

  // period_s 0: off.
  explicit SseKeepalive(double period_s)
      : period_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_s))) {}

  // Bytes went out at `t`; `data`: they held a data event.
  void wrote(Clock::time_point t, bool data) {
    last_write_ = t;
    data_sent_ = data_sent_ || data;
  }
  // Whether a comment may go out now.
  bool due(Clock::time_point now) const {
    return period_.count() > 0 && data_sent_ && now - last_write_ >= period_;
  }

 private:
  Clock::duration period_;
  Clock::time_point last_write_{};
  bool data_sent_ = false;
};

}  // namespace tinfer::server
