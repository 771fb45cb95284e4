// Chat templates for GGUF files that ship none, by general.architecture, written here in Jinja so
// they render through the same interpreter (and provenance tracking) as a model's own.
#include <string>

#include "text/chat/chat_template.h"

namespace tinfer {
namespace {

// No template at all: "role: content" lines, then "assistant:" to prompt the answer.
const char* kPlain =
    "{%- for message in messages -%}\n"
    "{{ message.role }}: {{ message.content }}\n"
    "{% endfor -%}\n"
    "{%- if add_generation_prompt -%}assistant:{%- endif -%}\n";

// Gemma (1/2/3) turns. BOS is not printed: add_bos supplies it. A system message has no turn of its
// own: it opens the first user turn, followed by a blank line. Contents are trimmed, as Google's
// template does; a content given as parts contributes its text parts.
const char* kGemma =
    "{%- if messages and messages[0]['role'] == 'system' -%}\n"
    "  {%- if messages[0]['content'] is string -%}\n"
    "    {%- set system_text = messages[0]['content'] -%}\n"
    "  {%- else -%}\n"
    "    {%- set system_text = messages[0]['content'] | selectattr('type', 'equalto', 'text') | map(attribute='text') | join('\\n') -%}\n"
    "  {%- endif -%}\n"
    "  {%- set turns = messages[1:] -%}\n"
    "{%- else -%}\n"
    "  {%- set system_text = '' -%}\n"
    "  {%- set turns = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in turns -%}\n"
    "  {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "    {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') -}}\n"
    "  {%- endif -%}\n"
    "  {{- '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' -}}\n"
    "  {%- if loop.first and system_text -%}{{- system_text + '\\n\\n' -}}{%- endif -%}\n"
    "  {%- if message['content'] is string -%}\n"
    "    {{- message['content'] | trim -}}\n"
    "  {%- else -%}\n"
    "    {%- for part in message['content'] if part['type'] == 'text' -%}{{- part['text'] | trim -}}{%- endfor -%}\n"
    "  {%- endif -%}\n"
    "  {{- '<end_of_turn>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}\n";

}  // namespace

std::string builtin_chat_template(const std::string& architecture) {
  if (architecture == "gemma" || architecture == "gemma2" || architecture == "gemma3") return kGemma;
  if (architecture.empty()) return kPlain;
  return {};
}

}  // namespace tinfer
