#!/usr/bin/env python3
"""Writes tests/data/gemma3/tokenizer_vectors.json: expected encodings of the Gemma 3 GGUF vocabulary.

The oracle is Hugging Face's: the tokenizer transformers builds from a GGUF (scripts/gemma3_hf_tokenizer.py,
AutoTokenizer.from_pretrained(dir, gguf_file=...) but with the literal space-run pieces kept as added
tokens, as Gemma's tokenizer.json and llama.cpp have them -- see that file), run by the `tokenizers`
package. Each case holds the text and two encodings without BOS:
  ids          special-token texts ("<bos>", "<start_of_turn>") left as plain text; user-defined tokens
               ("\\n", space and tab runs, "<table>") still matched whole, as llama.cpp does
               (tinfer: encode(text, false, false))
  ids_special  control-token texts mapped to their ids (tinfer: encode(text, false, true))
  ids_hf_gguf  (only where it differs from ids) transformers' GGUF conversion unchanged, for information
  ids_spm      (only where it differs from ids) the `sentencepiece` package with a model built from the
               GGUF's pieces (scripts/gemma3_spm_tokenizer.py), for information
Texts: slices of the shared corpora (../shared/corpus) and adversarial strings. Invalid UTF-8 cannot
be given to `tokenizers` (it takes str), so it is not covered here.

Usage: .venv/bin/python scripts/gen_gemma3_tokenizer_vectors.py [MODEL.gguf] [-o OUT.json]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemma3_hf_tokenizer import hf_tokenizer_from_gguf  # noqa: E402
from gemma3_spm_tokenizer import spm_from_gguf  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("TINFER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))

ADVERSARIAL = [
    "",
    " ",
    "  ",
    "   ",
    "a  b",
    "a   hello",
    "hello     world",
    " " * 31,
    " " * 40 + "x",
    "   leading spaces",
    "trailing spaces   ",
    "\t",
    "\t\tindented\t\t\tcode",
    "\t" * 35,
    "\n",
    "\n\n",
    "line\nline\n\nline\n\n\nline",
    "\n" * 40,
    "\r\n\r\nwindows\r\n",
    " \n \n  \n\t\n",
    "mixed \t \n \t\n\t spaces",
    "0",
    "42",
    "1234567890",
    "3.14159265358979323846264338327950288419716939937510",
    "12,345,678.90 and -0.001e+23",
    "2024-01-15T12:34:56Z",
    "0x7FFF_FFFF 0b1010",
    "😀",
    "👍🏽",
    "👨‍👩‍👧‍👦 family",
    "🏳️‍🌈 flag",
    "🇫🇷🇯🇵",
    "日本語のテキストです。",
    "中文分词测试：你好，世界！",
    "한국어 텍스트",
    "Ελληνικά και русский текст",
    "עברית ועربي",
    "ＦＵＬＬＷＩＤＴＨ　ｔｅｘｔ",
    "e\u0301 a\u0300 o\u0308\u0304",  # combining marks
    "Z\u0351\u0352\u0353a\u0354\u0355l\u0356g\u0357o",
    "caf\u00e9 vs cafe\u0301",
    "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<bos>",
    "<bos><bos>text",
    "<eos>",
    "<pad><unk><mask>",
    "< bos>",
    "<start_of_turn",
    "start_of_turn>",
    "<unused0><unused6241>",
    "<start_of_image>",
    "[multimodal]",
    "<table><tr><td>x</td></tr></table>",
    "<b>bold</b> <i>it</i>",
    "<0x41>",
    "\u2581already\u2581escaped",
    "no\u00a0break\u00a0space",
    "thin\u2009space en\u2002space em\u2003space",
    "ideographic\u3000space",
    "zero\u200bwidth\u200cjoiner\u200dnon",
    "\ufeffBOM at start",
    "tab\u000bvertical\u000cformfeed",
    "\x00nul\x01ctl\x7f",
    "replacement \ufffd char",
    "math 𝔸𝔹ℂ ∑∫∂ √2 ≠ ∞",
    "emoji🙂inside🙃words",
    "ALLCAPS lowercase MiXeD",
    "don't won't it's y'all",
    "http://example.com/path?query=1&x=y#frag",
    "def f(x):\n    return x ** 2  # comment\n",
    "    four\n        eight\n",
    "!!!???...,,,;;;:::",
    "a" * 200,
    "ab" * 100,
]

CORPORA = [
    ("corpus/wikitext-2-test.raw", [0, 5000, 123456, 700000]),
    ("corpus/tinystories-valid-head.txt", [0, 40000, 400000]),
    ("corpus/jargon.txt", [0, 300000, 1200000]),
    ("corpus/prompts-fortunes.txt", [0, 250000]),
]
SLICE = 600


def corpus_slices():
    out = []
    for rel, offsets in CORPORA:
        path = os.path.join(SHARED, rel)
        if not os.path.exists(path):
            raise SystemExit(f"{path} is absent (set TINFER_SHARED)")
        data = open(path, "rb").read()
        for off in offsets:
            b = data[off:off + SLICE]
            # Valid UTF-8 at both ends: drop continuation bytes at the start, an unfinished char at the end.
            while b and (b[0] & 0xC0) == 0x80:
                b = b[1:]
            text = b.decode("utf-8", errors="ignore")
            out.append({"source": f"{rel}@{off}", "text": text})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default=os.path.join(ROOT, "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("-o", "--out", default=os.path.join(ROOT, "tests/data/gemma3/tokenizer_vectors.json"))
    a = ap.parse_args()
    tok = hf_tokenizer_from_gguf(a.model)
    bt = tok.backend_tokenizer
    cases = [{"source": "adversarial", "text": t} for t in ADVERSARIAL] + corpus_slices()
    raw = hf_tokenizer_from_gguf(a.model, faithful=False).backend_tokenizer
    raw.encode_special_tokens = True
    sp = spm_from_gguf(a.model)
    for c in cases:
        bt.encode_special_tokens = True  # control texts stay text; user-defined (non-special) still match
        c["ids"] = bt.encode(c["text"], add_special_tokens=False).ids
        bt.encode_special_tokens = False
        c["ids_special"] = bt.encode(c["text"], add_special_tokens=False).ids
        other = raw.encode(c["text"], add_special_tokens=False).ids
        if other != c["ids"]:
            c["ids_hf_gguf"] = other
        other = sp.encode(c["text"])
        if other != c["ids"]:
            c["ids_spm"] = other
    doc = {
        "model": os.path.basename(a.model),
        "generator": "scripts/gen_gemma3_tokenizer_vectors.py (Hugging Face tokenizers, vocabulary converted "
                     "from the GGUF by transformers' gemma_tokenizer)",
        "versions": {"transformers": __import__("transformers").__version__,
                     "tokenizers": __import__("tokenizers").__version__},
        "cases": cases,
    }
    # One case per line, so a regenerated file diffs by case.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, ensure_ascii=False)[:-1]
    lines = [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in cases]
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(head + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n")
    n_ids = sum(len(c["ids"]) for c in cases)
    print(f"wrote {len(cases)} cases, {n_ids} ids to {a.out}; transformers' GGUF conversion differs on "
          f"{sum('ids_hf_gguf' in c for c in cases)}, sentencepiece on {sum('ids_spm' in c for c in cases)}")


if __name__ == "__main__":
    main()
