#include "text/tool_calls/byte_parser.h"

namespace tinfer::toolcall {

CallObjectReader::Status JsonCall::feed(char c, ParseDelta& out, JsonCallParser& p) {
  auto st = reader_.feed(c);
  if (st == CallObjectReader::Status::kError) return st;
  if (index_ < 0 && reader_.can_open()) index_ = p.sink_open(out, reader_.name());
  if (index_ >= 0) p.sink_piece(out, index_, reader_.take_pending());
  if (st == CallObjectReader::Status::kDone) {
    auto args = reader_.arguments();
    if (!args) return CallObjectReader::Status::kError;
    if (index_ < 0) {
      index_ = p.sink_open(out, reader_.name());
      p.sink_piece(out, index_, *args);
    }
    p.sink_close(index_, std::move(*args));
  }
  return st;
}

}  // namespace tinfer::toolcall
