// QuantizeOptions::validate: which of quantize's switches combine. Model-free, so the tool refuses a bad
// command line before loading anything (quantize_model checks what needs the model or the text).
#include "quantize/quantize_model.h"

namespace tinfer {

std::vector<std::string> QuantizeOptions::validate() const {
  std::vector<std::string> e;
  if (threads < 0 || threads > 1024) e.push_back("--threads must be in [0, 1024]");
  if (calib.max_tokens < 2) e.push_back("--calib-tokens must be at least 2");
  if (awq_act_quant && method != QuantMethod::awq && method != QuantMethod::awq_gptq)
    e.push_back("--awq-act-quant needs --method awq or awq+gptq");
  if (sequential && method != QuantMethod::gptq && method != QuantMethod::awq_gptq)
    e.push_back("--sequential needs --method gptq or awq+gptq");
  if (!held_out_tokens.empty() && method != QuantMethod::awq && method != QuantMethod::awq_gptq)
    e.push_back("--held-out-tokens needs --method awq or awq+gptq");
  if (held_out_tokens.size() == 1) e.push_back("--held-out-tokens must be 0 or at least 2");
  if (!(calib.first_token_weight > 0 && calib.first_token_weight <= 1e6))
    e.push_back("--first-token-weight must be in (0, 1e6]");
  return e;
}

}  // namespace tinfer
