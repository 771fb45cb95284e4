// The progress bar of `tinfer quantize` on stderr: tensors done/total, MB written/total, elapsed, ETA.
// On a terminal it redraws one line in place (at most 10 times a second); otherwise (a log, a pipe) it
// prints one line each time another ~10% of the work is done, so logs stay short.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace tinfer {

class Progress {
 public:
  // total_work: any additive measure of the work (weights quantized); the ETA assumes a constant rate.
  // tty: redraw in place; by default whether `out` is a terminal.
  Progress(FILE* out, int64_t total_tensors, uint64_t total_bytes, double total_work, int tty = -1);
  void update(int64_t tensors_done, uint64_t bytes_written, double work_done);
  // Prints a line of its own (clearing the bar first on a terminal).
  void note(const std::string& line);
  void finish();  // the final state on its own line (nothing if delayed and never drawn)
  // Draw nothing until `seconds` have passed (a load that may be short: only long ones show progress).
  void set_delay(double seconds) { delay_ = seconds; }

  // "12/48 tensors  3.2/10.5 MB  1.2 s elapsed  ETA 3.4 s" (exposed for tests).
  static std::string format(int64_t done, int64_t total, uint64_t bytes, uint64_t total_bytes, double elapsed,
                            double eta);

 private:
  void draw(bool final);
  FILE* out_;
  bool tty_;
  int64_t total_tensors_, done_ = 0;
  uint64_t total_bytes_, bytes_ = 0;
  double total_work_, work_ = 0;
  double t0_, last_draw_ = -1;
  int last_decile_ = -1;
  double delay_ = 0;
  bool drawn_ = false, finished_ = false, ever_drawn_ = false;
};

}  // namespace tinfer
