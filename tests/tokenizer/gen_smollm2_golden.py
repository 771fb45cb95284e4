#!/usr/bin/env python3
# Generates tests/tokenizer/data/smollm2_golden.txt: token ids from the Hugging Face `tokenizers`
# library for a byte-level BPE built from the SmolLM2 GGUF's own vocab + merges, with SmolLM2's
# pre-tokenizer (Digits(individual_digits) then ByteLevel's GPT-2 regex). One JSON object a line:
# {"text": ...} or {"file": <path under shared/>, "offset": o, "length": n}, plus "ids".
# Usage: python gen_smollm2_golden.py <SmolLM2.gguf> <shared dir>   (needs: gguf, tokenizers)
import json
import os
import sys

import gguf
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

CASES = [
    "Hello world", " Hello world", "Hello World!", "Hello, world! How are you?",
    "12345", "1 22 333 4444", "3.14159 and 2,718", "I'm sure you'll see they've done it'd",
    "DON'T SHOUT, it's 'quoted'", "multiple   spaces    here", "  leading and trailing  ",
    "line1\nline2\n\nline4\n", "tab\tseparated\t\tvalues", " \n \t \r\n", "\n", " ", "",
    "héllo wörld", "naïve café Ångström", "日本語のテキスト", "中文测试：你好，世界！", "한국어 텍스트",
    "emoji 😀👍🏽 and 🇫🇷", "Ελληνικά και Русский", "مرحبا بالعالم", "x² + y³ = z½ ٣٤٥",
    "def f(x):\n    return x**2  # square\n", "<html><body>Hi</body></html>", "a_b-c.d/e\\f",
    "!!!??? ... ---", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>text after<|endoftext|>", "not special: <|im_start", "\u00a0nbsp\u2003emsp\u3000ideographic",
]
FILES = [("corpus/wikitext-2-test.raw", 0, 3000), ("corpus/jargon.txt", 20000, 3000),
         ("corpus/tinystories-valid-head.txt", 0, 2000)]


def field_strings(r, key):
    f = r.fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def main():
    path, shared = sys.argv[1], sys.argv[2]
    r = gguf.GGUFReader(path)
    tokens = field_strings(r, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field_strings(r, "tokenizer.ggml.merges")]
    tt = r.fields["tokenizer.ggml.token_type"]
    types = [int(tt.parts[i][0]) for i in tt.data]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types) if ty == 3])
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "smollm2_golden.txt")
    with open(out, "w", encoding="utf-8") as f:
        for text in CASES:
            ids = tok.encode(text, add_special_tokens=False).ids
            f.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=True) + "\n")
        for rel, off, n in FILES:
            with open(os.path.join(shared, rel), "rb") as fh:
                fh.seek(off)
                raw = fh.read(n)
            while True:  # shorten to a character boundary; the length written is the one used
                try:
                    text = raw[:n].decode("utf-8")
                    break
                except UnicodeDecodeError:
                    n -= 1
            ids = tok.encode(text, add_special_tokens=False).ids
            f.write(json.dumps({"file": rel, "offset": off, "length": n, "ids": ids}) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
