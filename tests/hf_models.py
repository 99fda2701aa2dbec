"""Tiny random Hugging Face translation models built from sample data, saved with ``save_pretrained``
(nothing is downloaded): a MarianMT (OPUS-MT layout: source.spm, target.spm, vocab.json) and an
M2M-100 (one sentencepiece model, language codes)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from helpers import SAMPLE

from attnalign.data.corpus import read_corpus
from attnalign.nmt.subword import train_segmenter

SIZES = dict(d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
             decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=256,
             dropout=0.0, attention_dropout=0.0)


def _spm(sentences, size: int) -> bytes:
    return train_segmenter(sentences, size).proto


def _pieces(proto: bytes) -> list[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=proto)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def build_marian(out: Path, reverse: bool = False) -> Path:
    """A MarianMT en->fr (fr->en with ``reverse``) with random weights."""
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")
    en, fr = [s for s, _ in pairs], [t for _, t in pairs]
    src, tgt = (fr, en) if reverse else (en, fr)
    out.mkdir(parents=True, exist_ok=True)
    src_p, tgt_p = _spm(src, 300), _spm(tgt, 300)
    (out / "source.spm").write_bytes(src_p)
    (out / "target.spm").write_bytes(tgt_p)
    vocab = {"</s>": 0, "<unk>": 1}
    for p in _pieces(src_p) + _pieces(tgt_p):
        vocab.setdefault(p, len(vocab))
    vocab["<pad>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab))
    with warnings.catch_warnings():  # "pip install sacremoses": not needed for tokenized text
        warnings.filterwarnings("ignore", message=".*sacremoses.*")
        tok = MarianTokenizer(str(out / "source.spm"), str(out / "target.spm"), str(out / "vocab.json"))
    n = len(vocab)
    cfg = MarianConfig(vocab_size=n, pad_token_id=n - 1, eos_token_id=0, decoder_start_token_id=n - 1,
                       forced_eos_token_id=0, **SIZES)
    torch.manual_seed(0)
    MarianMTModel(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def build_m2m100(out: Path) -> Path:
    """An M2M-100 over en and fr (one shared sentencepiece model) with random weights."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")
    proto = _spm([s for s, _ in pairs] + [t for _, t in pairs], 400)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sentencepiece.bpe.model").write_bytes(proto)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for p in _pieces(proto):
        vocab.setdefault(p, len(vocab))
    (out / "vocab.json").write_text(json.dumps(vocab))
    tok = M2M100Tokenizer(str(out / "vocab.json"), str(out / "sentencepiece.bpe.model"))
    n = max(tok.lang_token_to_id.values()) + 1 + 8  # pieces, language codes, 8 made-up words (as M2M-100)
    cfg = M2M100Config(vocab_size=n, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                       decoder_start_token_id=2, **SIZES)
    torch.manual_seed(0)
    M2M100ForConditionalGeneration(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out
