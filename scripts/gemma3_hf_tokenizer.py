"""The Gemma 3 GGUF's tokenizer as Hugging Face builds it: an independent encoder for parity tests.

transformers converts a GGUF vocabulary with `gemma_tokenizer` (integrations/gguf/gguf_tokenizer_mapping.py):
a `tokenizers` BPE model with byte fallback, merges derived from the vocabulary (ranked by file order),
the normalizer " " -> U+2581, control tokens added as special tokens and user-defined tokens ("\\n", runs
of spaces/tabs, "<table>" ...) as plain added tokens. `AutoTokenizer.from_pretrained(dir, gguf_file=...)`
does exactly this but imports torch to read the metadata; here the metadata comes from the `gguf` package
and the same transformers builder functions are called, so no torch is needed.

One deliberate difference (faithful=True, the default): transformers' gemma_tokenizer respells the
user-defined pieces made of 2..31 literal spaces (ids 138..167) as U+2581 runs, which turns them into
ordinary BPE merges (32 spaces + "The" -> 16+16 spaces, "The"), and then no longer adds them as added
tokens. Gemma's own tokenizer (tokenizer.json: added tokens with literal-space content, not normalized)
and llama.cpp (user-defined pieces matched whole in the raw text, longest first) give 31 spaces, " The".
With faithful=True the pieces keep the GGUF's spelling, so they are added tokens matched whole, as every
other user-defined piece ("\n" runs, tab runs, "<table>") already is. faithful=False is transformers as is.
"""
import gguf


def gguf_tokenizer_dict(path):
    """(architecture, tokenizer dict in transformers' GGUF naming, metadata extras)."""
    r = gguf.GGUFReader(path)

    def field(name):
        f = r.fields.get(name)
        return None if f is None else f.contents()

    d = {
        "tokenizer_type": field("tokenizer.ggml.model"),
        "pre_tokenizer_type": field("tokenizer.ggml.pre"),
        "tokens": field("tokenizer.ggml.tokens"),
        "scores": field("tokenizer.ggml.scores"),
        "token_type": field("tokenizer.ggml.token_type"),
        "bos_token_id": field("tokenizer.ggml.bos_token_id"),
        "eos_token_id": field("tokenizer.ggml.eos_token_id"),
        "unk_token_id": field("tokenizer.ggml.unknown_token_id"),
        "pad_token_id": field("tokenizer.ggml.padding_token_id"),
        "add_prefix_space": field("tokenizer.ggml.add_space_prefix"),
    }
    d = {k: v for k, v in d.items() if v is not None}
    return field("general.architecture"), d


def hf_tokenizer_from_gguf(path, faithful=True):
    """A transformers tokenizer object as AutoTokenizer.from_pretrained(dir, gguf_file=name) builds it
    (faithful=False), or with the space-run pieces kept as the GGUF spells them (faithful=True)."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        GemmaTokenizer,
        add_gguf_special_tokens,
        select_tokenizer_builder,
        sentencepiece_tokenizer,
        set_split_regex,
    )

    arch, d = gguf_tokenizer_dict(path)
    if faithful and arch in ("gemma", "gemma2", "gemma3") and d.get("tokenizer_type") == "llama":
        # gemma_tokenizer without the respelling: merges ranked by file order, as transformers ranks them.
        positions = {token: -index for index, token in enumerate(d["tokens"])}
        tok = sentencepiece_tokenizer(d, GemmaTokenizer, vocab_scores=positions)
    else:
        tok = select_tokenizer_builder(arch, d.get("tokenizer_type"))(d)
    tok = add_gguf_special_tokens(tok, d)
    tok = set_split_regex(tok, d)
    return tok


def encode(tok, text):
    """Ids of `text` without BOS, special-token texts not parsed (tinfer's encode(text, false, false))."""
    return tok.backend_tokenizer.encode(text, add_special_tokens=False).ids
