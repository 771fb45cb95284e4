// The subcommands of the tinfer binary; each lives in its own cmd_*.cpp file.
#pragma once

namespace tinfer::cli {

using Command = int (*)(int argc, char** argv);  // argv excludes the subcommand name

int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_ppl(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_bench_throughput(int argc, char** argv);  // `tinfer bench throughput`, dispatched by cmd_bench
int cmd_bench_ladder(int argc, char** argv);      // `tinfer bench ladder`, dispatched by cmd_bench
int cmd_bench_serve(int argc, char** argv);       // `tinfer bench serve`, dispatched by cmd_bench
int cmd_bench_spec(int argc, char** argv);
int cmd_bench_grammar(int argc, char** argv);     // `tinfer bench grammar`: structured output's costs        // `tinfer bench spec`, dispatched by cmd_bench
int cmd_bench_route(int argc, char** argv);       // `tinfer bench route`, dispatched by cmd_bench
int cmd_tokenize(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_calibrate_kv(int argc, char** argv);
int cmd_calibrate_skip(int argc, char** argv);
int cmd_calibrate_exit(int argc, char** argv);
int cmd_calibrate_route(int argc, char** argv);
int cmd_kv_plan(int argc, char** argv);
int cmd_derive(int argc, char** argv);
int cmd_convert(int argc, char** argv);

}  // namespace tinfer::cli
