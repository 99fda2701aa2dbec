"""What ``attnalign plot sentence`` shows: panels for one pair, from a model or a saved attention file.

Returns :class:`~attnalign.plot.Panel` lists (data), which :mod:`attnalign.plot` draws as figures or
terminal tables.
"""

from __future__ import annotations

import os
from dataclasses import replace

from .align import Aligner, AlignOptions, decode_pair, resolve_decoding
from .alignments import Alignment
from .attnfile import read_attention
from .decode import argmax_src_links, decode_matrix
from .errors import AttnAlignError
from .extract import AttentionSpec, corpus_attention
from .plot import Panel
from .symmetrize import METHODS


def _compare_panels(fwd, eos, rev, rev_eos, src, tgt, gold, opts: AlignOptions, sym: str, settings: dict,
                    show_eos: bool) -> list[Panel]:
    e = eos if show_eos else None
    if rev is None:  # one direction: the decoders side by side
        out = []
        for dec in ("argmax", "argmax-src", "inter", "threshold"):
            links = decode_matrix(fwd, dec, eos, opts.threshold)
            name = f"threshold {opts.threshold}" if dec == "threshold" else dec
            out.append(Panel(fwd, src, tgt, links, gold, e, f"forward, {name}", settings))
        return out
    sym_name = sym if sym in METHODS else "grow-diag-final-and"
    sym_links, _, _ = decode_pair(fwd, eos, rev, rev_eos, opts.decoder, sym_name, opts.threshold)
    soft_links, _, soft = decode_pair(fwd, eos, rev, rev_eos, opts.decoder, "soft", opts.threshold)
    return [
        Panel(fwd, src, tgt, decode_matrix(fwd, opts.decoder, eos, opts.threshold), gold, e,
              f"forward, {opts.decoder}", settings),
        Panel(rev, src, tgt, argmax_src_links(rev, rev_eos), gold, None, "reverse (turned), argmax",
              settings),
        Panel(fwd, src, tgt, sym_links, gold, e, f"{sym_name}", settings),
        Panel(soft, src, tgt, soft_links, gold, None, f"soft, {opts.decoder}", settings),
    ]


def model_panels(model_dir: str | os.PathLike, src: list[str], tgt: list[str], options: AlignOptions,
                 *, gold: Alignment | None = None, compare: bool = False, all_layers: bool = False,
                 all_heads: bool = False, show_eos: bool = False) -> list[Panel]:
    """Panels for one pair aligned by a model: the chosen configuration, a comparison, or a
    layer x head grid (Transformers)."""
    if not src or not tgt:
        raise AttnAlignError("both sides of the pair need at least one word")
    grid = all_layers or all_heads
    aligner = Aligner(model_dir, replace(options, layer=None if all_layers else options.layer,
                                         head="mean" if all_heads else options.head))
    options = aligner.options  # "auto" choices resolved for this model
    settings = {"model": os.path.basename(os.path.normpath(model_dir)), **aligner.description}
    if grid:
        lm = aligner.forward
        if lm.model_type != "transformer":
            raise AttnAlignError("--layer all / --head all need a Transformer model; this one is an RNN")
        L, H = lm.config["dec_layers"], lm.config["heads"]
        layers = range(L) if all_layers else [aligner.spec.layer if aligner.spec.layer is not None else -2]
        heads = range(H) if all_heads else [aligner.spec.head]
        panels = []
        settings = {**settings, "grid_cols": len(heads) if all_heads else min(4, len(layers))}
        for layer in layers:
            for head in heads:
                spec = AttentionSpec(layer, head, options.shift)
                ((m, eos),) = corpus_attention(lm, [(src, tgt)], spec, device=options.device)
                links = decode_matrix(m, options.decoder, eos, options.threshold)
                panels.append(Panel(m, src, tgt, links, gold, eos if show_eos else None,
                                    f"layer {layer} head {head}", settings))
        return panels
    (pair,) = aligner.align_pairs([(src, tgt)])
    if compare:
        rev_eos = None
        if aligner.reverse is not None:
            ((_, rev_eos),) = corpus_attention(aligner.reverse, [(tgt, src)], aligner.spec,
                                               device=options.device)
        fwd = pair.matrix if aligner.sym != "soft" else None
        if fwd is None:
            ((fwd, _),) = corpus_attention(aligner.forward, [(src, tgt)], aligner.spec, device=options.device)
        return _compare_panels(fwd, pair.eos, pair.reverse, rev_eos, src, tgt, gold, options,
                               aligner.sym, settings, show_eos)
    title = f"{settings['model']}: {settings_line(settings)}"
    return [Panel(pair.matrix, src, tgt, pair.links, gold, pair.eos if show_eos else None, title, settings)]


def saved_panels(path: str | os.PathLike, index: int, options: AlignOptions, *,
                 gold: Alignment | None = None, compare: bool = False, show_eos: bool = False) -> list[Panel]:
    """Panels for one pair of a saved attention file (``align corpus --save-attention``)."""
    p = read_attention(path, index)
    settings = {k: v for k, v in p.meta.items() if k in ("model", "sym", "layer", "head", "shift")}
    directions = ["forward", "reverse"] if p.reverse is not None else ["forward"]
    options = resolve_decoding(replace(options, layer=None), directions, p.meta.get("layer") == "align")
    sym = options.sym
    if compare:
        return _compare_panels(p.matrix, p.eos, p.reverse, None, p.src, p.tgt, gold, options, sym,
                               settings, show_eos)
    links, _, m = decode_pair(p.matrix, p.eos, p.reverse, None, options.decoder,
                              sym if p.reverse is not None else "none", options.threshold)
    title = f"pair {index}: {settings_line({**settings, 'decoder': options.decoder, 'sym': sym})}"
    return [Panel(m, p.src, p.tgt, links, gold, p.eos if show_eos else None, title, settings)]


def settings_line(settings: dict) -> str:
    keys = ("model_type", "sym", "decoder", "layer", "head", "shift")
    return ", ".join(f"{k}={settings[k]}" for k in keys if settings.get(k) is not None)
