#!/usr/bin/env python3
"""Unigram tokenizer-parity fixtures for tests/tokenizer/test_unigram.cpp (sibling of gen_hf_tokenizer_fixtures.py).

Trains two tiny Unigram tokenizers with the Hugging Face `tokenizers` package on slices of the shared corpora:
  - unigram:    Metaspace pre-tokenizer (prepend_scheme "always", split), no byte fallback: unknown characters -> <unk>
                (consecutive ones fused), as T5/ALBERT-style tokenizer.json files are laid out;
  - unigram_bf: byte_fallback, Prepend("▁") + Replace(" ", "▁") normalizers and no pre-tokenizer (Gemma-style), with
                the 256 <0xNN> pieces appended to the vocabulary (score 0, as SentencePiece gives byte pieces);
and records HF's ids (add_special_tokens=False) and decodes of corpus lines and adversarial strings, plus the
"unigram" vocabulary with prepend_scheme "first" (unigram_first; the test derives that file from unigram's).
Writes tests/tokenizer/data/hf/unigram*.tokenizer.json and unigram_expected.json (small: vocabularies of 500-600).

SentencePiece itself (the `sentencepiece` package) is the second oracle: two unigram .model files (identity
normalisation, so no charsmap; remove_extra_whitespaces on, as spm_train defaults), with and without byte_fallback,
and its ids for the same texts -> tests/tokenizer/data/spm_unigram/{plain,bytes}.model and expected.json.

  python scripts/gen_hf_unigram_fixtures.py [--shared /work/shared]   # needs `pip install tokenizers sentencepiece`
"""
import argparse
import importlib.util
import io
import json
import os

import sentencepiece as spm

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

_spec = importlib.util.spec_from_file_location("bpe_fixtures", os.path.join(os.path.dirname(__file__),
                                                                           "gen_hf_tokenizer_fixtures.py"))
bpe_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bpe_fixtures)

SPECIALS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
# Beyond the BPE fixtures' adversarial strings: characters the training text lacks (unk runs, byte fallback),
# ZWJ sequences, combining marks, leading/trailing spaces around specials, control characters.
EXTRA = [
    "ʤ ⅏ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ", "qqqq ʤʤʤ qq", "👩‍💻👩🏽‍🔬 e\u0301 a\u0308", "\u00a0nbsp\u2009thin\u3000ideo", "ctrl\x01\x02\x7f end",
    " <s> x </s> ", "<s><s>", "hello<|im_end|>", "<|im_start|>", "▁already ▁metaspace▁", "a\u2581\u2581b",
    "zz" * 40, "The", " The", "  The", "the the the the", "x", " ",
]


def unigram(vocab, pre, norm):
    tok = Tokenizer(models.Unigram())
    if pre is not None:
        tok.pre_tokenizer = pre
    if norm is not None:
        tok.normalizer = norm
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=vocab, special_tokens=SPECIALS, unk_token="<unk>", show_progress=False)
    return tok, trainer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.environ.get("TINFER_SHARED", "/work/shared"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "tokenizer", "data", "hf"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    text = bpe_fixtures.training_text(args.shared, chars=200_000)
    texts = bpe_fixtures.corpus_lines(args.shared, 25, seed=16) + bpe_fixtures.ADVERSARIAL + EXTRA
    metaspace = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    gemma_norm = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    specs = {"unigram": unigram(600, metaspace, None), "unigram_bf": unigram(500, None, gemma_norm)}
    expected = {"texts": texts, "encodings": {}, "decodes": {}}
    built = {}
    for name, (tok, trainer) in specs.items():
        tok.train_from_iterator(text, trainer)
        j = json.loads(tok.to_str())
        if name == "unigram_bf":
            j["model"]["byte_fallback"] = True
            j["model"]["vocab"] += [["<0x%02X>" % b, 0.0] for b in range(256)]
            j["decoder"] = {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
                {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
        built[name] = j
    variant = json.loads(json.dumps(built["unigram"]))
    variant["pre_tokenizer"]["prepend_scheme"] = "first"
    for name, j in list(built.items()) + [("unigram_first", variant)]:
        tok = Tokenizer.from_str(json.dumps(j))
        if name != "unigram_first":
            with open(os.path.join(args.out, name + ".tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
        ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        expected["encodings"][name] = ids
        expected["decodes"][name] = [tok.decode(i) for i in ids]
    with open(os.path.join(args.out, "unigram_expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))

    spm_dir = os.path.join(args.out, "..", "spm_unigram")
    os.makedirs(spm_dir, exist_ok=True)
    sentences = [l for chunk in text for l in chunk.split("\n") if l.strip()]
    spm_expected = {"texts": texts, "encodings": {}}
    for name, byte_fallback in (("plain", False), ("bytes", True)):
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=model, model_type="unigram",
                                       vocab_size=500, normalization_rule_name="identity", byte_fallback=byte_fallback,
                                       character_coverage=0.995, minloglevel=2)
        with open(os.path.join(spm_dir, name + ".model"), "wb") as f:
            f.write(model.getvalue())
        sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
        spm_expected["encodings"][name] = [sp.encode(t) for t in texts]
    with open(os.path.join(spm_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(spm_expected, f, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()
