#!/usr/bin/env python3
"""Expected encodings of tokenizer.json files with a Unicode normalizer (Qwen's NFC; NFKC), from the Hugging Face
`tokenizers` package: the committed fixtures of tests/tokenizer/data/hf/ with their normalizer set to NFC or NFKC
(prepended to any they have), on text whose normal forms differ from it (combining accents, compatibility
characters, Hangul jamo). Writes tests/tokenizer/data/hf/normalizer_expected.json; test_hf_tokenizer.cpp applies the
same change to the same fixture and compares. Needs `tokenizers` (pip), not a project dependency at run time."""
import json
import pathlib

from tokenizers import Tokenizer

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests/tokenizer/data/hf"
CASES = [("qwen2", "NFC"), ("llama3", "NFKC"), ("spm_bpe", "NFC"), ("unigram", "NFKC")]
TEXTS = [
    "cafe\u0301 na\u0308ive",              # combining marks -> precomposed
    "\ufb01le \u2460 \uff21\uff22\uff23",  # compatibility: ligature, circled digit, fullwidth (NFKC only)
    "\u1100\u1161\u11a8 \uac00",           # Hangul jamo -> syllable
    "Once upon a time, A\u030a and \u00c5.",
    "plain ASCII stays as it is",
]


def with_normalizer(tj, form):
    tj = json.loads(json.dumps(tj))
    old = tj.get("normalizer")
    if old is None:
        tj["normalizer"] = {"type": form}
    else:
        inner = old["normalizers"] if old.get("type") == "Sequence" else [old]
        tj["normalizer"] = {"type": "Sequence", "normalizers": [{"type": form}] + inner}
    return tj


def main():
    out = []
    for name, form in CASES:
        tj = json.loads((DATA / f"{name}.tokenizer.json").read_text(encoding="utf-8"))
        tok = Tokenizer.from_str(json.dumps(with_normalizer(tj, form)))
        for text in TEXTS:
            out.append({"fixture": name, "normalizer": form, "text": text,
                        "ids": tok.encode(text, add_special_tokens=False).ids})
    lines = ",\n".join(json.dumps(o, ensure_ascii=False) for o in out)
    (DATA / "normalizer_expected.json").write_text("[\n" + lines + "\n]\n", encoding="utf-8")


if __name__ == "__main__":
    main()
