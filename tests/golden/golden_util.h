// Helpers for golden tests: run the tinfer binary and capture its output and exit status.
#pragma once
#include <cstdio>
#include <string>

namespace tinfer::test {

struct RunResult {
  int status = -1;
  std::string out;  // stdout (stderr is appended when merge_stderr)
};

inline RunResult run_command(const std::string& cmd) {
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace tinfer::test
