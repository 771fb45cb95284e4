// check_same_tokenizer: token by token, naming the first difference.
#include "text/tokenizer/same_tokenizer.h"

#include "tinfer/error.h"

namespace tinfer {

void check_same_tokenizer(const Tokenizer& target, const Tokenizer& draft, const std::string& what_name,
                          const std::string& target_name) {
  const std::string what = what_name + ": its tokenizer differs from the " + target_name + "'s (";
  check(target.n_vocab() == draft.n_vocab(), what + "vocabulary of " + std::to_string(draft.n_vocab()) +
                                                 " tokens, the " + target_name + " has " +
                                                 std::to_string(target.n_vocab()) + ")");
  check(target.bos() == draft.bos() && target.eos() == draft.eos(), what + "BOS/EOS ids)");
  for (int32_t id = 0; id < target.n_vocab(); ++id) {
    check(target.piece(id) == draft.piece(id), what + "token " + std::to_string(id) + " is '" + draft.piece(id) +
                                                   "', the " + target_name + "'s is '" + target.piece(id) + "')");
    check(target.is_eog(id) == draft.is_eog(id), what + "token " + std::to_string(id) + " end-of-generation flag)");
    check(target.token_bytes(id).empty() == draft.token_bytes(id).empty(),
          what + "token " + std::to_string(id) + " is a control token in one of them)");
  }
}

}  // namespace tinfer
