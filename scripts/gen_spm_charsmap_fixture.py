#!/usr/bin/env python3
"""A SentencePiece unigram model trained with the default nmt_nfkc normalisation (so it carries a precompiled
character map) and its expected encodings, from the `sentencepiece` package: tests/tokenizer/data/spm_unigram/
nfkc.model and nfkc_expected.json (the texts of expected.json plus strings the map changes: fullwidth forms,
ligatures, circled digits, ideographic and no-break spaces, tabs, composed/decomposed accents, and malformed-looking
input). test_unigram.cpp loads the model through tinfer's .model reader and compares. Needs `sentencepiece` (pip)."""
import json
import pathlib

import sentencepiece as spm

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/tokenizer/data/spm_unigram"
SHARED = ROOT.parent / "shared"
EXTRA = [
    "Ｈｅｌｌｏ　ｗｏｒｌｄ！", "ﬁne ﬂow ① ② ™ ½", "tab\there\u00a0no-break  two  spaces", "cafe\u0301 café",
    "\u3000 ideographic space \u3000", "ＡＢＣ１２３", "Ⅻ ㎏ ㍿", "x\u200by zero width", "   lead and trail   ",
    "mixed\r\nline\rends", "Once upon a time, there was a little girl.", "", "🙂 emoji stays",
]


def main():
    corpus = DATA / "nfkc_corpus.tmp"
    corpus.write_bytes((SHARED / "corpus/tinystories-valid-head.txt").read_bytes()[:200000])
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(DATA / "nfkc"), vocab_size=400,
                                   model_type="unigram", normalization_rule_name="nmt_nfkc", character_coverage=1.0,
                                   minloglevel=2)
    corpus.unlink()
    (DATA / "nfkc.vocab").unlink()
    sp = spm.SentencePieceProcessor(model_file=str(DATA / "nfkc.model"))
    texts = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))["texts"] + EXTRA
    out = {"texts": texts, "ids": [sp.encode(t) for t in texts]}
    (DATA / "nfkc_expected.json").write_text(json.dumps(out, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
