#!/usr/bin/env python3
"""Writes the llama.cpp oracle vectors for Qwen2.5-Coder-0.5B-Instruct (models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf):

  tests/data/qwen2.5-coder/tokenizer_vectors.json  every case's ids from `llama-tokenize` on the same GGUF:
      ids          --no-parse-special (control-token texts such as "<|im_start|>" stay text)
      ids_special  its default, special parsing (control-token texts map to their ids)
    (no BOS: the file says add_bos_token = false). Texts: adversarial strings (code, whitespace runs, digits,
    unicode, Chinese, the model's special and tool-call tokens), the 46 texts of ../shared/vocab-tests/llama-spm.inp,
    and slices of the shared corpora.
  tests/data/qwen2.5-coder/corpus_tokens.json  whole shared corpus files through `llama-tokenize`: the id count and
    an FNV-1a 64 hash of the ids (int32 little-endian bytes), too many ids to store.
  tests/data/qwen2.5-coder/greedy.json  `llama-simple -n 32` (greedy) continuations of plain and chat-formatted
    prompts (two of them the model's tool-calling template: a call, and the answer after role "tool" results): the
    bytes it printed after the prompt's; where tinfer's greedy choice leaves llama.cpp's at a near tie (NEAR_TIES,
    measured with tinfer's fp64 reference), the agreed prefix and the reference's top two.

llama.cpp is built outside the repository from PyPI's llama-cpp-python sdist (vendor/llama.cpp; see
../shared/README.md, peers/), CPU only:

    .venv/bin/python scripts/gen_qwen_coder_vectors.py --llama-bin /work/peers/llama.cpp/build/bin [--parts tokens,corpus,greedy]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("TINFER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
OUT_DIR = os.path.join(ROOT, "tests/data/qwen2.5-coder")

ADVERSARIAL = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", " \n \n  \n\t\n", "\r\n\r\nwindows\r\n",
    "a  b", "hello     world", " " * 40 + "x", "trailing spaces   ", "\t\tindented\t\t\tcode",
    "0", "42", "1234567890", "3.14159265358979", "12,345,678.90 and -0.001e+23", "0x7FFF_FFFF 0b1010",
    "2024-01-15T12:34:56Z",
    "don't won't it's y'all I'M WE'LL 'quoted'",
    "ALLCAPS lowercase MiXeD CamelCaseIdentifier snake_case_name",
    "http://example.com/path?query=1&x=y#frag",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "#include <stdio.h>\nint main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "const f = async (x) => { await fetch(`/api/${x}`); };  // arrow\n",
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}",
    "    four\n        eight\n            twelve\n",
    "!!!???...,,,;;;::: ->>= <<= != == === ** // && ||",
    "中文分词测试：你好，世界！",
    "请用Python写一个快速排序函数。",
    "日本語のテキストです。", "한국어 텍스트", "Ελληνικά и русский текст", "עברית ועربي",
    "ＦＵＬＬＷＩＤＴＨ　ｔｅｘｔ", "caf\u00e9 vs cafe\u0301", "e\u0301 a\u0300 o\u0308\u0304",
    "😀", "👍🏽", "👨‍👩‍👧‍👦 family", "🇫🇷🇯🇵", "emoji🙂inside🙃words", "math 𝔸𝔹ℂ ∑∫∂ √2 ≠ ∞",
    "no\u00a0break\u00a0space", "zero\u200bwidth\u200cjoiner\u200dnon", "\ufeffBOM at start",
    "tab\u000bvertical\u000cformfeed", "replacement \ufffd char",
    "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>", "<|im_start|><|im_end|>", "< |im_start|>", "<|im_start", "im_end|>",
    "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
    "<tools>\n{}\n</tools>", "<tool_response>\nok\n</tool_response>",
    "<|fim_prefix|>def f(<|fim_suffix|>)\n<|fim_middle|>", "<|repo_name|>x<|file_sep|>a.py",
    "<|box_start|><|quad_end|><|vision_pad|>",
    "a" * 200, "ab" * 100, "1" * 50,
]

CORPORA = [
    ("corpus/wikitext-2-test.raw", [0, 5000, 123456, 700000]),
    ("corpus/tinystories-valid-head.txt", [0, 400000]),
    ("corpus/jargon.txt", [0, 300000, 1200000]),
    ("corpus/prompts-fortunes.txt", [0, 250000]),
]
SLICE = 600

# Greedy prompts: plain text and the model's chat format (Qwen's template renders a system turn by default).
SYSTEM = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
GREEDY = [
    ("plain_code", "def quicksort(arr):\n"),
    ("plain_text", "The capital of France is"),
    ("chat_code", SYSTEM + "<|im_start|>user\nWrite a Python function that checks whether a number is prime."
                           "<|im_end|>\n<|im_start|>assistant\n"),
    ("chat_chinese", SYSTEM + "<|im_start|>user\n用一句话解释什么是递归。<|im_end|>\n<|im_start|>assistant\n"),
]
N_PREDICT = 32
# Where tinfer's greedy continuation leaves llama.cpp's: a near tie, measured with tinfer's fp64 ReferenceForward at
# the first differing token (its top two logits), recorded so the test checks the agreed prefix only.
NEAR_TIES = {
    "plain_code": {"agreed": "    if len(arr) <= 1:\n        return arr\n   ",
                   "reference_top2": "' else' 19.7182, ' pivot' 19.6604 (llama.cpp: ' else'; tinfer: ' pivot')"},
    "chat_chinese": {"agreed": "递归是一种函数，它通过调用自身来解决其问题。递归是一种非常强大的编程",
                     "reference_top2": "'技术' 16.4576, '语言' 16.4150 (llama.cpp: '语言'; tinfer: '技术')"},
}


def tool_prompts():
    """Python jinja2's rendering of the file's template (tests/data/chat_templates/templates/qwen2.5.jinja byte for
    byte; scripts/gen_chat_template_vectors.py's environment) for the parallel_tool_calls conversation of
    tests/data/chat_templates/conversations.json: its first two turns (the model should call the tools) and all of
    it (the model answers from the tools' results)."""
    import gen_chat_template_vectors as g
    data = os.path.join(ROOT, "tests/data/chat_templates")
    conv = next(c for c in json.load(open(os.path.join(data, "conversations.json"), encoding="utf-8"))
                if c["name"] == "parallel_tool_calls")
    tmpl = g.make_env().from_string(open(os.path.join(data, "templates/qwen2.5.jinja"), encoding="utf-8").read())
    render = lambda msgs: tmpl.render(messages=msgs, tools=conv["tools"], add_generation_prompt=True,
                                      bos_token="", eos_token="<|im_end|>")
    return [("chat_tool_call", render(conv["messages"][:2])), ("chat_tool_result", render(conv["messages"]))]


def corpus_slices():
    out = []
    for rel, offsets in CORPORA:
        data = open(os.path.join(SHARED, rel), "rb").read()
        for off in offsets:
            b = data[off:off + SLICE]
            while b and (b[0] & 0xC0) == 0x80:  # valid UTF-8 at both ends
                b = b[1:]
            out.append({"source": f"{rel}@{off}", "text": b.decode("utf-8", errors="ignore")})
    return out


def spm_cases():
    text = open(os.path.join(SHARED, "vocab-tests/llama-spm.inp"), encoding="utf-8").read()
    return [{"source": f"vocab-tests/llama-spm.inp#{i}", "text": t}
            for i, t in enumerate(text.split("\n__ggml_vocab_test__\n")) if t or i == 0]


def llama_tokenize(bin_dir, model, text, special):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        flags = [] if special else ["--no-parse-special"]  # llama-tokenize parses specials by default
        r = subprocess.run([os.path.join(bin_dir, "llama-tokenize"), "-m", model, "-f", path, "--ids", "--no-escape",
                            "--log-disable"] + flags, capture_output=True, check=True)
    finally:
        os.unlink(path)
    line = r.stdout.decode().strip().splitlines()[-1]
    return json.loads(line)


WHOLE_FILES = ["corpus/wikitext-2-test.raw", "corpus/jargon.txt"]


def fnv1a64(ids):
    h = 0xcbf29ce484222325
    for t in ids:
        for b in int(t).to_bytes(4, "little", signed=True):
            h = ((h ^ b) * 0x100000001b3) % (1 << 64)
    return f"{h:016x}"


def corpus_files(bin_dir, model):
    out = []
    for rel in WHOLE_FILES:
        r = subprocess.run([os.path.join(bin_dir, "llama-tokenize"), "-m", model, "-f", os.path.join(SHARED, rel), "--ids",
                            "--no-escape", "--log-disable", "--no-parse-special"], capture_output=True, check=True)
        ids = json.loads(r.stdout.decode().strip().splitlines()[-1])
        out.append({"source": rel, "n_ids": len(ids), "fnv1a64": fnv1a64(ids), "first_ids": ids[:16]})
    return out


def llama_greedy(bin_dir, model, prompt):
    r = subprocess.run([os.path.join(bin_dir, "llama-simple"), "-m", model, "-n", str(N_PREDICT), prompt],
                       capture_output=True, check=True)
    out = r.stdout.decode("utf-8", errors="strict")
    # llama-simple prints the prompt's pieces (special tokens rendered), then each generated piece, then "\n".
    assert out.startswith(prompt), (prompt, out[:200])
    assert out.endswith("\n")
    return out[len(prompt):-1]


def write_cases(path, head, cases):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in cases]
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-bin", required=True, help="llama.cpp's build/bin (llama-tokenize, llama-simple)")
    ap.add_argument("--model", default=os.path.join(ROOT, "models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("--version", default="llama-cpp-python 0.3.36 vendor/llama.cpp")
    ap.add_argument("--parts", default="tokens,corpus,greedy", help="which files to rewrite")
    a = ap.parse_args()
    head = {"model": os.path.basename(a.model), "oracle": "llama.cpp (" + a.version + "), same GGUF",
            "generator": "scripts/gen_qwen_coder_vectors.py"}
    cases = [{"source": "adversarial", "text": t} for t in ADVERSARIAL] + spm_cases() + corpus_slices()
    parts = a.parts.split(",")
    if "corpus" in parts:
        write_cases(os.path.join(OUT_DIR, "corpus_tokens.json"), dict(head, tool="llama-tokenize --ids --no-parse-special"),
                    corpus_files(a.llama_bin, a.model))
    if "tokens" in parts:
        for c in cases:
            c["ids"] = llama_tokenize(a.llama_bin, a.model, c["text"], False)
            c["ids_special"] = llama_tokenize(a.llama_bin, a.model, c["text"], True)
        write_cases(os.path.join(OUT_DIR, "tokenizer_vectors.json"), dict(head, tool="llama-tokenize --ids"), cases)
    if "greedy" not in parts:
        return
    prompts = GREEDY + tool_prompts()
    greedy = [{"name": n, "prompt": p, "n_predict": N_PREDICT, "continuation": llama_greedy(a.llama_bin, a.model, p)}
              for n, p in prompts]
    for g in greedy:
        if g["name"] in NEAR_TIES:
            g["near_tie"] = NEAR_TIES[g["name"]]
    write_cases(os.path.join(OUT_DIR, "greedy.json"), dict(head, tool=f"llama-simple -n {N_PREDICT} (greedy)"), greedy)
    print(f"wrote {a.parts} ({len(cases)} tokenizer cases, {len(greedy)} greedy continuations) to {OUT_DIR}")


if __name__ == "__main__":
    main()
