"""Pretrained Hugging Face translation models (MarianMT / OPUS-MT, M2M-100, NLLB, any ``transformers``
encoder-decoder) as a source of attention, behind the same interface as attnalign's own models.

A model is named by a directory written with ``save_pretrained`` (recognised by its ``config.json``,
which has a ``model_type`` and no attnalign ``directions``) or by ``hf:NAME``, resolved through the
local Hugging Face cache only: nothing is downloaded at run time. Loading never runs code from the
model directory (``trust_remote_code`` is off) and prefers safetensors weights.

Extraction is teacher-forced like the native models': the source is encoded as the model's tokenizer
encodes it (language code, pieces, ``</s>``), the decoder reads the reference target shifted right by
the model's ``decoder_start_token_id``, and the cross-attention of every layer and head comes back as
``[B, layers, heads, T_dec, S_tok]``. Pieces map back to the corpus's whitespace words (a source word
gets the sum of its pieces' columns, a target word the mean of its pieces' rows); the mass on tokens
that are no word (``</s>``, language codes) is the EOS mass.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import AttnAlignError, OptionError
from .checkpoint import HF_PREFIX
from .options import BATCH_TOKENS
from .words import tokens_to_words

INSTALL_HINT = 'install the optional dependencies: pip install "attnalign[hf]"'


def _transformers():
    try:
        import transformers
    except ImportError:
        raise AttnAlignError("reading a Hugging Face model needs the transformers library",
                             hint=INSTALL_HINT) from None
    transformers.logging.set_verbosity_error()  # its notices and bars are not the user's business here
    transformers.utils.logging.disable_progress_bar()
    return transformers


@dataclass
class _Side:
    """How one side's words become token ids: the tokens around the words and each word's pieces."""

    prefix: list[int]
    suffix: list[int]
    target: bool
    cache: dict[str, list[int]] = field(default_factory=dict)

    def encode(self, tok, words: Sequence[str]) -> tuple[list[int], list[int]]:
        """Token ids of a sentence and, per token, its word's index (-1: no word)."""
        ids = list(self.prefix)
        index = [-1] * len(ids)
        for k, w in enumerate(words):
            got = self.cache.get(w)
            if got is None:
                got = (tok(text_target=w, add_special_tokens=False) if self.target
                       else tok(w, add_special_tokens=False))["input_ids"]
                if len(self.cache) < 1_000_000:
                    self.cache[w] = got
            ids += got
            index += [k] * len(got)
        return ids + self.suffix, index + [-1] * len(self.suffix)


def _frame(tok, target: bool) -> _Side:
    """The special tokens the tokenizer puts before and after a sentence (language code, ``</s>``),
    found by encoding one word with and without them."""
    enc = (lambda w, sp: tok(text_target=w, add_special_tokens=sp)) if target else (
        lambda w, sp: tok(w, add_special_tokens=sp))
    full, body = enc("a", True)["input_ids"], enc("a", False)["input_ids"]
    for p in range(len(full) - len(body) + 1):
        if full[p : p + len(body)] == body:
            return _Side(full[:p], full[p + len(body):], target)
    raise AttnAlignError("cannot tell the tokenizer's special tokens from a word's pieces",
                         hint="this tokenizer is not supported; please report the model name")


class HFModel:
    """A loaded Hugging Face encoder-decoder, with the attributes the aligner reads from
    :class:`~attnalign.nmt.checkpoint.LoadedModel`."""

    has_layers = True  # --layer / --head choose among its decoder layers and heads
    lowercase = False

    def __init__(self, ref: str, src_lang: str | None = None, tgt_lang: str | None = None,
                 device: str = "cpu", direction: str = "forward", align: tuple[int, int] | None = None):
        """``align``: the (layer, head) fine-tuned on a guide (``train --init-from``), read by
        ``--layer align`` and by default."""
        tf = _transformers()
        self.align = align
        name = ref[len(HF_PREFIX):] if ref.startswith(HF_PREFIX) else ref
        self.ref = ref
        self.direction = direction
        kw = {"local_files_only": True, "trust_remote_code": False}  # never download, never run its code
        try:
            config = tf.AutoConfig.from_pretrained(name, **kw)
        except Exception as e:  # noqa: BLE001 - whatever transformers raises for a folder it cannot read
            if ref.startswith(HF_PREFIX):
                raise AttnAlignError(
                    f"the Hugging Face model {name!r} is not in the local cache ({_first_line(e)})",
                    hint=f"download it on a connected machine (hf download {name}, or "
                         f"huggingface-cli download {name}) and copy the cache (HF_HOME), or give the "
                         "directory saved with save_pretrained") from None
            raise AttnAlignError(f"cannot read the Hugging Face model configuration ({_first_line(e)})",
                                 path=ref) from None
        if not getattr(config, "is_encoder_decoder", False):
            raise AttnAlignError(
                f"{config.model_type!r} is not an encoder-decoder translation model: it has no "
                "cross-attention to read", path=ref,
                hint="give a translation model (MarianMT/OPUS-MT, M2M-100, NLLB, mBART, T5 ...); "
                     "encoder-only models such as BERT are what awesome-align and SimAlign read")
        try:
            with warnings.catch_warnings():  # attnalign feeds tokenized text: no Moses normalisation needed
                warnings.filterwarnings("ignore", message=".*sacremoses.*")
                tok = tf.AutoTokenizer.from_pretrained(name, **kw)
            self._set_languages(tok, src_lang, tgt_lang)  # before the weights: a wrong code fails fast
            with warnings.catch_warnings():  # torch's notes on a refused pickle: the error below says it
                warnings.simplefilter("ignore", UserWarning)
                model = tf.AutoModelForSeq2SeqLM.from_pretrained(name, attn_implementation="eager", **kw)
        except AttnAlignError:
            raise
        except Exception as e:  # noqa: BLE001 - a truncated or refused weights file, a bad config value ...
            raise AttnAlignError(f"cannot load the Hugging Face model ({_first_line(e)})", path=ref,
                                 hint="the directory needs the weights and the tokenizer files that "
                                      "save_pretrained writes") from None
        self.hf_type = config.model_type
        self.model_type = f"hf-{config.model_type}"
        self.tok = tok
        self.src_side, self.tgt_side = _frame(tok, False), _frame(tok, True)
        self.base = model.get_encoder(), model.get_decoder()
        self.model = model.to(device).eval()
        self.config = {"dec_layers": int(config.decoder_layers),
                       "heads": int(config.decoder_attention_heads)}
        if align is not None:
            self.config["align_head"] = True  # the report sweeps it as "align"
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else config.pad_token_id
        self.start_id = config.decoder_start_token_id
        if self.start_id is None:
            raise AttnAlignError("the model's config names no decoder_start_token_id", path=ref)
        self.max_positions = getattr(config, "max_position_embeddings", None)

    def _set_languages(self, tok, src_lang, tgt_lang) -> None:
        """Multilingual tokenizers (M2M-100, NLLB, mBART-50) need the pair's language codes."""
        multilingual = hasattr(tok, "src_lang") and hasattr(tok, "tgt_lang") and (
            getattr(tok, "lang_code_to_id", None) or getattr(tok, "lang_token_to_id", None)
            or getattr(tok, "additional_special_tokens", None))
        if not multilingual:
            if src_lang or tgt_lang:
                raise OptionError(f"--src-lang/--tgt-lang apply to multilingual models; {self.ref} "
                                  "translates one language pair")
            return
        if not (src_lang and tgt_lang):
            raise OptionError(f"{self.ref} is multilingual: give --src-lang and --tgt-lang (its language "
                              "codes, e.g. en and fr for M2M-100, eng_Latn and fra_Latn for NLLB)")
        try:
            tok.src_lang, tok.tgt_lang = src_lang, tgt_lang
            tok("a")
            tok(text_target="a")
        except (KeyError, ValueError, AttributeError) as e:
            raise OptionError(f"the model does not know the language code {_first_line(e)}",
                              hint="use the codes of its tokenizer (e.g. en, fr; NLLB: eng_Latn)") from None

    def reads_align(self, spec) -> bool:
        """Whether ``spec`` reads the fine-tuned head (--layer align, or no --layer on a tuned model)."""
        self.resolve_spec(spec)  # --layer align without a tuned head raises
        return self.align is not None and spec.layer in (None, "align")

    def resolve_spec(self, spec):
        """``spec`` with ``--layer align`` (or, on a fine-tuned model, no --layer) turned into the
        fine-tuned layer and head."""
        from .readouts import AttentionSpec

        if spec.layer == "align" and self.align is None:
            raise OptionError("--layer align reads a head fine-tuned with train --init-from; this pretrained "
                              "model has none", hint="leave --layer out, or give a layer index")
        if spec.layer in (None, "align") and self.align is not None:
            return AttentionSpec(self.align[0], self.align[1], spec.shift)
        return spec

    def token_count(self, words: Sequence[str], side: str) -> int:
        """Model tokens of a sentence on ``side`` ("src"/"tgt"), specials included."""
        s = self.src_side if side == "src" else self.tgt_side
        return len(s.encode(self.tok, words)[0])

    def encode(self, pairs) -> list:
        """Per pair ``((source ids, word of each), (label ids, word of each))``; word -1: no word."""
        return [(self.src_side.encode(self.tok, s), self.tgt_side.encode(self.tok, t)) for s, t in pairs]

    def pad(self, encoded: list) -> tuple:
        """Encoded pairs as padded tensors: source ids ``[B, S]``, their mask, the decoder input ``[B, T]``
        (the labels shifted right behind ``decoder_start_token_id``) and the labels (-100 where padded)."""
        import torch

        S = max(len(s[0]) for s, _ in encoded)
        T = max(len(t[0]) for _, t in encoded)
        src = torch.full((len(encoded), S), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(encoded), S), dtype=torch.long)
        dec = torch.full((len(encoded), T), self.pad_id, dtype=torch.long)
        labels = torch.full((len(encoded), T), -100, dtype=torch.long)
        for k, ((s_ids, _), (t_ids, _)) in enumerate(encoded):
            src[k, : len(s_ids)] = torch.tensor(s_ids)
            mask[k, : len(s_ids)] = 1
            dec[k, : len(t_ids)] = torch.tensor([self.start_id, *t_ids[:-1]])
            labels[k, : len(t_ids)] = torch.tensor(t_ids)
        return src, mask, dec, labels

    def cross_attention(self, src, src_mask, dec_in):
        """``[B, layers, heads, T_dec, S]`` cross-attention of every decoder layer and head."""
        import torch

        enc, dec = self.base
        h = enc(input_ids=src, attention_mask=src_mask).last_hidden_state
        out = dec(input_ids=dec_in, encoder_hidden_states=h, encoder_attention_mask=src_mask,
                  output_attentions=True, use_cache=False)
        return torch.stack(out.cross_attentions, dim=1)

    def iter_attention(self, pairs, spec, batch_tokens: int = BATCH_TOKENS, device="cpu"
                       ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """As :func:`attnalign.nmt.extract.iter_attention`: ``(index, matrix [T, S], eos_mass [T])`` per
        pair over words; non-word tokens' mass is the EOS mass."""
        import torch

        from .batching import bucket_batches
        from .readouts import reduce_attention

        spec = self.resolve_spec(spec)
        enc = self.encode(pairs)
        todo = [i for i, (s, t) in enumerate(pairs) if s and t]
        for i, (s, t) in enumerate(pairs):
            if not (s and t):
                yield i, np.zeros((len(t), len(s)), np.float32), np.zeros(len(t), np.float32)
        lengths = [(len(enc[i][0][0]), len(enc[i][1][0])) for i in todo]
        with torch.inference_mode():
            for group in bucket_batches(lengths, batch_tokens):
                idx = [todo[k] for k in group]
                src, mask, dec, _ = self.pad([enc[i] for i in idx])
                att = reduce_attention(self.cross_attention(src.to(device), mask.to(device),
                                                            dec.to(device)), spec)
                att = att.float().cpu().numpy()
                for k, i in enumerate(idx):
                    (_, s_idx), (_, t_idx) = enc[i]
                    cols = [p for p, w in enumerate(s_idx) if w >= 0]
                    rows = [p for p, w in enumerate(t_idx) if w >= 0]
                    a = att[k, [r + spec.shift for r in rows]]  # label position p is decoder input p+1
                    m = a[:, cols]
                    eos = a.sum(1) - m.sum(1)  # mass on </s>, language codes: no word
                    yield i, *tokens_to_words(m, eos, [s_idx[p] for p in cols], [t_idx[p] for p in rows],
                                              len(pairs[i][0]), len(pairs[i][1]))


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else type(e).__name__
