#!/usr/bin/env python3
"""Tokenizer-parity fixtures for tokenizer.json loading (tests/tokenizer/test_hf_tokenizer.cpp).

Trains four tiny tokenizers with the Hugging Face `tokenizers` package on slices of the shared corpora -- byte-level
BPE with the Llama 3 and Qwen 2 Split regexes, GPT-2's regex ByteLevel, and a SentencePiece-style BPE with byte
fallback (Prepend + Replace normalizer, <0xNN> pieces) -- and records HF's encodings (add_special_tokens=False) of
corpus lines and adversarial strings. Writes tests/tokenizer/data/hf/<name>.tokenizer.json and expected.json.

  .venv/bin/python scripts/gen_hf_tokenizer_fixtures.py [--shared /work/shared]
"""
import argparse
import json
import os
import random

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADVERSARIAL = [
    "", " ", "   ", "\n\n\n", "\t \t", "a  b   c    d", "  leading and trailing  ", "line\r\nbreak\rcr\n",
    "1234567890 12 123 1234 3.14159 -42 1e10", "٣٤٥ ½ Ⅻ ²", "emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷", "日本語のテキスト 中文 한국어",
    "Ünïcödé çàfé naïve Ωmega", "don't I'LL you'Re we've they'd", "<|im_start|>user\nhi<|im_end|>",
    "<|im_start |> <|im_end <im_end|> <|endoftext|><|endoftext|>", "<s> </s> <unk> <0x41>", "x" * 120,
    "!!!??? ... ---- ____ ==== ####", "tab\tsep\tvalues\t", "mixed123abc456 ABC def", "  \n  \n\t\n ",
]


def corpus_lines(shared, n_per_file, seed):
    rng = random.Random(seed)
    out = []
    for name in sorted(os.listdir(os.path.join(shared, "corpus"))):
        with open(os.path.join(shared, "corpus", name), encoding="utf-8", errors="replace") as f:
            lines = [l.rstrip("\n") for l in f if 0 < len(l.strip()) and len(l) < 240]
        out += rng.sample(lines, min(n_per_file, len(lines)))
    return out


def training_text(shared, chars=400_000):
    text = []
    for name in sorted(os.listdir(os.path.join(shared, "corpus"))):
        with open(os.path.join(shared, "corpus", name), encoding="utf-8", errors="replace") as f:
            text.append(f.read(chars // 4))
    return text


def byte_level(pre, vocab):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    return tok, trainer


def spm_bpe(vocab):
    byte_pieces = ["<0x%02X>" % b for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<unk>", "<s>", "</s>"] + byte_pieces,
                                  show_progress=False)
    return tok, trainer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.environ.get("TINFER_SHARED", "/work/shared"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "tokenizer", "data", "hf"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    text = training_text(args.shared)
    texts = corpus_lines(args.shared, 30, seed=15) + ADVERSARIAL
    specs = {
        "llama3": byte_level(pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), 700),
        "qwen2": byte_level(pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), 700),
        "gpt2": byte_level(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), 700),
        "spm_bpe": spm_bpe(900),
    }
    expected = {"texts": texts, "encodings": {}}
    for name, (tok, trainer) in specs.items():
        tok.train_from_iterator(text, trainer)
        j = json.loads(tok.to_str())
        if name == "spm_bpe":  # <0xNN> were trainer specials only to reserve ids: make them plain vocab pieces
            j["added_tokens"] = [t for t in j["added_tokens"] if not t["content"].startswith("<0x")]
            tok = Tokenizer.from_str(json.dumps(j))
        if name == "gpt2":  # the older merges format, "a b" strings (both exist in published files)
            j["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
            tok = Tokenizer.from_str(json.dumps(j))
        with open(os.path.join(args.out, name + ".tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
        expected["encodings"][name] = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    with open(os.path.join(args.out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()
