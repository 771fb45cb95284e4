// tinfer: one binary, one subcommand per file (run, chat, info, ppl, synth, bench, serve).
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  std::fprintf(stderr, "usage: tinfer <run|chat|info|ppl|synth|bench> ...\n");
  return argc > 1 && std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
