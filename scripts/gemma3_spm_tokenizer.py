"""The Gemma 3 GGUF's vocabulary as a SentencePiece model: the `sentencepiece` package's own encoder.

A ModelProto is built from tokenizer.ggml.{tokens,scores,token_type}: BPE, byte fallback, identity
normalizer without dummy prefix or whitespace squeezing (what llama.cpp's converter records for Gemma:
add_space_prefix false), piece types as the GGUF states them (CONTROL, USER_DEFINED, BYTE, UNUSED ...).
SentencePiece matches USER_DEFINED pieces ("\\n", literal space and tab runs, "<table>") whole in the raw
text and merges the rest by score, which is how the model's training data was tokenized.
"""
import gguf


def spm_from_gguf(path):
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    r = gguf.GGUFReader(path)
    f = lambda n: r.fields[n].contents()  # noqa: E731
    tokens, scores, types = f("tokenizer.ggml.tokens"), f("tokenizer.ggml.scores"), f("tokenizer.ggml.token_type")
    m = pb.ModelProto()
    t = m.trainer_spec
    t.model_type = pb.TrainerSpec.BPE
    t.vocab_size = len(tokens)
    t.byte_fallback = True
    t.unk_id = f("tokenizer.ggml.unknown_token_id")
    t.bos_id = f("tokenizer.ggml.bos_token_id")
    t.eos_id = f("tokenizer.ggml.eos_token_id")
    t.pad_id = f("tokenizer.ggml.padding_token_id")
    n = m.normalizer_spec
    n.name = "identity"
    n.add_dummy_prefix = bool(f("tokenizer.ggml.add_space_prefix"))
    n.remove_extra_whitespaces = False
    n.escape_whitespaces = True
    for tok, sc, ty in zip(tokens, scores, types):
        p = m.pieces.add()
        p.piece = tok
        p.score = float(sc)
        p.type = int(ty)  # GGUF token types use SentencePiece's numbering (1 normal .. 6 byte)
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(m.SerializeToString())
    return sp
