// Progress bar: in-place redraw on a terminal, one line per ~10% elsewhere.
#include "quantize/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "core/timer.h"

namespace tinfer {

namespace {
std::string seconds(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(s) % 60);
  return buf;
}
}  // namespace

Progress::Progress(FILE* out, int64_t total_tensors, uint64_t total_bytes, double total_work, int tty)
    : out_(out),
      tty_(tty < 0 ? (out && isatty(fileno(out))) : tty != 0),
      total_tensors_(total_tensors),
      total_bytes_(total_bytes),
      total_work_(total_work),
      t0_(now_s()) {}

std::string Progress::format(int64_t done, int64_t total, uint64_t bytes, uint64_t total_bytes, double elapsed,
                             double eta) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lld/%lld tensors  %.1f/%.1f MB  %s elapsed  ETA %s", (long long)done,
                (long long)total, bytes / 1e6, total_bytes / 1e6, seconds(elapsed).c_str(),
                done >= total ? "0.0 s" : seconds(eta).c_str());
  return buf;
}

void Progress::update(int64_t tensors_done, uint64_t bytes_written, double work_done) {
  done_ = tensors_done;
  bytes_ = bytes_written;
  work_ = work_done;
  if (!out_) return;
  const double t = now_s();
  if (t - t0_ < delay_) return;
  if (tty_) {
    if (t - last_draw_ >= 0.1 || done_ >= total_tensors_) {
      last_draw_ = t;
      draw(false);
    }
    return;
  }
  const double frac = total_work_ > 0 ? work_ / total_work_ : 1.0;
  const int decile = std::min(10, int(frac * 10 + 1e-9));
  if (decile > last_decile_) {
    last_decile_ = decile;
    draw(false);
  }
}

void Progress::draw(bool final) {
  ever_drawn_ = true;
  const double elapsed = now_s() - t0_;
  const double frac = total_work_ > 0 ? std::min(1.0, work_ / total_work_) : 1.0;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : -1;
  const std::string text = format(done_, total_tensors_, bytes_, total_bytes_, elapsed, eta);
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = int(frac * kWidth + 0.5);
    std::string bar(size_t(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r\x1b[K[%s] %3d%%  %s%s", bar.c_str(), int(frac * 100 + 1e-9), text.c_str(),
                 final ? "\n" : "");
    drawn_ = !final;
  } else {
    std::fprintf(out_, "quantize: %3d%%  %s\n", int(frac * 100 + 1e-9), text.c_str());
  }
  std::fflush(out_);
}

void Progress::note(const std::string& line) {
  if (!out_) return;
  if (tty_ && drawn_) std::fprintf(out_, "\r\x1b[K");
  std::fprintf(out_, "%s\n", line.c_str());
  if (tty_ && drawn_) draw(false);
  std::fflush(out_);
}

void Progress::finish() {
  if (!out_ || finished_) return;
  finished_ = true;
  if (delay_ > 0 && !ever_drawn_) return;
  if (tty_)
    draw(true);
  else if (last_decile_ < 10)
    draw(false);
}

}  // namespace tinfer
