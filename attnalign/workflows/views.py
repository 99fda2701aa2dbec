"""What ``attnalign plot sentence`` shows: panels for one pair, from a model or a saved attention file.

Returns :class:`~attnalign.eval.plot.Panel` lists (data), which :mod:`attnalign.eval.plot` draws as figures or
terminal tables.
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace

import numpy as np

from ..data.alignments import Alignment
from ..data.attnfile import REWRITE, AttentionFile, read_attention
from ..data.corpus import open_corpus, tokenize
from ..data.fileio import path_text
from ..decoding import DECODERS, SYMMETRIZATIONS, argmax_src_links, decode_matrix, decode_pair
from ..decoding.policy import AUTO, Decoding, recorded_decoding
from ..errors import AttnAlignError, OptionError
from ..eval.plot import Panel, figure_for, settings_text, shared_settings
from ..eval.scoring import GoldOptions, read_gold, read_prediction_line
from ..nmt.options import MAX_LENGTH, AlignOptions
from ..nmt.readouts import READOUT, READOUTS

COMPARE_SYM = "grow-diag-final-and"  # the hard symmetrization --compare shows beside a soft one


def _compare_panels(fwd, eos, rev, rev_eos, src, tgt, gold, opts: Decoding, settings: dict,
                    show_eos: bool) -> list[Panel]:
    e = eos if show_eos else None
    if rev is None:  # one direction: the decoders side by side
        out = []
        for dec in DECODERS:
            links = decode_matrix(fwd, dec, eos, opts.threshold)
            name = f"threshold {opts.threshold}" if dec == "threshold" else dec
            out.append(Panel(fwd, src, tgt, links, gold, e, f"forward, {name}", settings))
        return out
    sym_name = opts.sym if SYMMETRIZATIONS[opts.sym].hard else COMPARE_SYM
    sym_links, _, _ = decode_pair(fwd, eos, rev, rev_eos, opts.decoder, sym_name, opts.threshold)
    soft_links, _, soft = decode_pair(fwd, eos, rev, rev_eos, opts.decoder, "soft", opts.threshold)
    # each panel says its own direction and symmetrization, so the figure's title keeps only what
    # they share
    return [
        Panel(fwd, src, tgt, decode_matrix(fwd, opts.decoder, eos, opts.threshold), gold, e,
              f"forward, {opts.decoder}", {**settings, "sym": "none"}),
        Panel(rev, src, tgt, argmax_src_links(rev, rev_eos), gold, None, "reverse (turned), argmax",
              {**settings, "sym": "none", "decoder": "argmax"}),
        Panel(fwd, src, tgt, sym_links, gold, e, f"{sym_name} links over the forward attention",
              {**settings, "sym": sym_name}),
        Panel(soft, src, tgt, soft_links, gold, None, f"soft (mean of both), {opts.decoder}",
              {**settings, "sym": "soft"}),
    ]


@functools.lru_cache(maxsize=2)
def _aligner(model_dir: str, options: AlignOptions, stamp: tuple | None):
    """The model loaded once for the pairs a report's gallery draws one by one; ``stamp``: the model
    directory as it is now (:func:`_stamp`), so that a model written again is loaded again."""
    from ..nmt.aligner import Aligner

    return Aligner(model_dir, options)


def _stamp(model_dir) -> tuple | None:
    """When the model directory and each file in it last changed."""
    try:
        with os.scandir(model_dir) as entries:
            return (os.stat(model_dir).st_mtime_ns,
                    *sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in entries))
    except OSError:  # hf:NAME, or a directory that is gone: the Aligner says what is wrong
        return None


def model_panels(model_dir: str | os.PathLike, src: list[str], tgt: list[str], options: AlignOptions,
                 *, gold: Alignment | None = None, compare: bool = False, all_layers: bool = False,
                 all_heads: bool = False, show_eos: bool = False, corpus=None, index: int = 0,
                 outputs: dict | None = None) -> list[Panel]:
    """Panels for one pair aligned by a model: its links as ``align corpus`` writes them for pair
    ``index`` of ``corpus`` (None: the pair alone is the corpus), the student blended with its teacher
    where the run has one; or the student's attention alone: a comparison, or a layer x head grid
    (Transformers). ``outputs``: the run's output paths (``{option: path}``), which a teacher trained
    now may not read."""
    if not src or not tgt:
        raise OptionError("both sides of the pair need at least one word")
    if all_layers or all_heads:
        return _grid_panels(model_dir, src, tgt, options, gold, all_layers, all_heads, show_eos)
    return pairs_panels(model_dir, [(src, tgt)], options, [gold], compare=compare, show_eos=show_eos,
                        corpus=corpus, index=index, outputs=outputs)[0]


def pairs_panels(model_dir: str | os.PathLike, pairs: list, options: AlignOptions, golds: list, *,
                 compare: bool = False, show_eos: bool = False, corpus=None, index: int = 0,
                 outputs: dict | None = None) -> list[list[Panel]]:
    """:func:`model_panels` of many pairs at once, their attention extracted in batches, the model loaded
    once: for each of ``pairs`` (with its gold of ``golds``) the panel of its links as ``align corpus``
    writes them for ``corpus``, in which ``pairs`` are the lines from ``index`` (None: ``pairs`` are the
    corpus); or, with ``compare``, the student's attention alone, read both ways."""
    from ..combine import combined_aligner

    aligner = _aligner(str(model_dir), options, _stamp(model_dir))
    if compare:
        return [_student_panels(aligner, p, g, model_dir, show_eos)
                for p, g in zip(aligner.extract(pairs), golds, strict=True)]
    run, _ = combined_aligner(aligner, model_dir, pairs if corpus is None else corpus, options.teacher,
                              options.teacher_corpus, outputs)
    return [[_links_panel(run, aligner, p, g, model_dir, show_eos)]
            for p, g in zip(run.align_pairs(pairs, 0 if corpus is None else index), golds, strict=True)]


def gallery_panels(model_dir: str | os.PathLike, pairs: list, options: AlignOptions, golds: list
                   ) -> list[tuple[Panel, list[Panel]]]:
    """A report's gallery, its attention extracted once: for each of ``pairs`` (with its gold of
    ``golds``) the picture ``pairs_panels(..., show_eos=True)`` draws and the panels of ``compare``
    beside it, for ``options`` without a teacher (both read the student alone)."""
    from ..combine import combined_aligner
    from ..nmt.aligner import read_links

    if options.teacher != "off":
        raise ValueError("a gallery reads the student alone: give options with teacher='off'")
    aligner = _aligner(str(model_dir), options, _stamp(model_dir))
    run, _ = combined_aligner(aligner, model_dir, pairs, options.teacher)  # the aligner, decoding as it runs
    out = []
    for p, g in zip(aligner.extract(pairs), golds, strict=True):
        seen = _student_panels(aligner, p, g, model_dir, False)  # before read_links sets the pair's links
        out.append((_links_panel(run, aligner, read_links(p, run.decoding), g, model_dir, True), seen))
    return out


def _student_panels(aligner, pair, gold, model_dir, show_eos: bool) -> list[Panel]:
    """``--compare``'s panels of one extracted pair: the student's attention alone, read both ways."""
    settings = {**aligner.description, "model": _model_name(model_dir)}
    return _compare_panels(pair.forward, pair.eos, pair.reverse, pair.reverse_eos, pair.src, pair.tgt, gold,
                           aligner.decoding, settings, show_eos)  # aligner.decoding: "auto" without a teacher


def _links_panel(run, aligner, pair, gold, model_dir, show_eos: bool) -> Panel:
    """The panel of one pair's links as ``run`` (the aligner, or it with its teacher) decoded them."""
    from ..nmt.extract import predicted_positions

    name = _model_name(model_dir)
    settings = {**run.description, "model": name}
    # what it is first
    background = _background(run.decoding, readout=aligner.reading.readout)
    title = f"{background}\n{settings_line(settings)}, model {name}"
    where = predicted_positions(aligner.forward, pair.src, pair.tgt, aligner.reading.device)
    note = "" if where is None else "\ndashed: the forward local-p attention's predicted position"
    return Panel(pair.matrix, pair.src, pair.tgt, pair.links, gold, pair.eos if show_eos else None,
                 title + note, settings, positions=where)


def _model_name(model_dir) -> str:
    """The model's folder, which a panel names (often "model")."""
    return os.path.basename(os.path.normpath(model_dir))


def _grid_panels(model_dir, src, tgt, options: AlignOptions, gold, all_layers: bool, all_heads: bool,
                 show_eos: bool) -> list[Panel]:
    """A Transformer's layers x heads (``all_layers``, ``all_heads``) for one pair, each decoded as the
    student alone decodes."""
    from ..nmt.extract import corpus_attention

    aligner = _aligner(str(model_dir), replace(options, layer=None if all_layers else options.layer,
                                               head="mean" if all_heads else options.head),
                       _stamp(model_dir))
    reading, dec = aligner.reading, aligner.decoding
    fwd = aligner.forward
    if not fwd.has_layers:
        raise OptionError("--layer all / --head all need a Transformer model; this one is an RNN")
    L, H = fwd.config["dec_layers"], fwd.config["heads"]
    layers = range(L) if all_layers else [aligner.spec.layer if aligner.spec.layer is not None else -2]
    heads = range(H) if all_heads else [aligner.spec.head]
    settings = {**aligner.description, "model": _model_name(model_dir),
                "grid_cols": len(heads) if all_heads else min(4, len(layers))}
    panels = []
    for layer in layers:
        for head in heads:
            spec = replace(aligner.spec, layer=layer, head=head)
            ((m, eos),) = corpus_attention(fwd, [(src, tgt)], spec, device=reading.device)
            links = decode_matrix(m, dec.decoder, eos, dec.threshold)
            panels.append(Panel(m, src, tgt, links, gold, eos if show_eos else None,
                                f"layer {layer} head {head}", settings))
    return panels


def _background(decoding: Decoding, both: bool = True, readout: str = READOUT) -> str:
    """What the heatmap under the links is (the links may come from both directions, the matrices
    blended with the teacher's); ``both``: the reverse direction was read; ``readout``: what the matrix
    was read from (the attention, or another readout)."""
    sym = decoding.sym if both else "none"
    what = "attention" if readout == READOUT else f"{readout} readout"
    forward = f"forward {what}" if decoding.teacher_weight is None else \
        f"forward {what} blended with the teacher's (weight {decoding.teacher_weight:g})"
    if sym == "none":
        return forward
    if SYMMETRIZATIONS[sym].hard:
        return f"{sym} links over the {forward}"
    blended = "" if decoding.teacher_weight is None else \
        f", each direction blended with the teacher's (weight {decoding.teacher_weight:g})"
    matrix = "the matrix" if readout == READOUT else f"the {readout} readout's matrix"
    return f"{sym}: {matrix} the links were decoded from{blended}"


def saved_panels(path, index: int, options: AlignOptions, *,
                 gold: Alignment | None = None, compare: bool = False, show_eos: bool = False) -> list[Panel]:
    """Panels for one pair of a saved attention file (``align corpus --save-attention``; its path, or an
    open :class:`~attnalign.data.attnfile.AttentionFile`), its links read with the decoding the file
    records (:func:`~attnalign.decoding.policy.recorded_decoding`): those of ``align corpus``'s line,
    unless ``options`` change the decoding."""
    if isinstance(path, AttentionFile):
        p, path = path.pair(index), path.path
    else:
        p = read_attention(path, index)
    if not p.src or not p.tgt:
        side = "source" if not p.src else "target"
        raise AttnAlignError(f"pair {index} has an empty {side} side: there is no matrix to draw", path=path,
                             hint="choose another --index")
    _check_saved_options(path, p, options)
    settings = {k: v for k, v in p.meta.items() if k in ("model", "sym", "layer", "head", "shift", "readout")}
    try:
        dec = recorded_decoding(p.meta, options.decoding).check()
        saved = recorded_decoding(p.meta).check()
    except OptionError as e:
        raise AttnAlignError(f"the attention file records a decoding attnalign cannot read ({e.message})",
                             path=path, hint=REWRITE) from None
    rev = p.reverse
    if p.forward is None and rev is not None and not SYMMETRIZATIONS[saved.sym].hard \
            and SYMMETRIZATIONS[saved.sym].both:  # a file of an earlier attnalign: the combined matrix alone
        if dec.sym != saved.sym or compare:
            raise OptionError(f"the attention file holds the matrix --sym {saved.sym} read, not each "
                              "direction's (it was written by an earlier attnalign)", path=path,
                              hint="write it again with align corpus --save-attention")
        rev = None
    fwd = p.matrix if p.forward is None else p.forward
    if compare:
        return _compare_panels(fwd, p.eos, rev, p.reverse_eos, p.src, p.tgt, gold, dec, settings, show_eos)
    links, _, m = decode_pair(fwd, p.eos, rev, p.reverse_eos if rev is not None else None, dec.decoder,
                              dec.sym if rev is not None else "none", dec.threshold)
    line = settings_line({**settings, "decoder": dec.decoder, "sym": dec.sym, "teacher": dec.teacher_weight})
    what = _background(dec, p.reverse is not None, p.meta.get("readout", READOUT))
    title = f"index {index}: {what}\n{line}" + (
        f", model {settings['model']}" if settings.get("model") else "")
    return [Panel(m, p.src, p.tgt, links, gold, p.eos if show_eos else None, title, settings)]


def _check_saved_options(path, pair, options: AlignOptions) -> None:
    """A saved file holds the matrices that align corpus read: options that would read others (a layer,
    a head, a shift) or a reverse matrix it lacks do not apply, rather than mislabel the figure."""
    for flag, value, default in (("--layer", options.layer, None), ("--head", options.head, "mean"),
                                 ("--shift", options.shift, 0), ("--readout", options.readout, READOUT),
                                 ("--smoothgrad", options.smoothgrad, 0)):
        if value != default:
            saved = pair.meta.get(flag[2:])
            raise OptionError(f"{flag} does not apply to a saved attention file: it holds the matrices read "
                              f"with {flag} {saved}", path=path,
                              hint=f"leave {flag} out, or plot from the model (--model) to read another")
    if options.sym != AUTO and pair.reverse is None and SYMMETRIZATIONS[options.sym].both:
        raise OptionError(f"--sym {options.sym} needs both directions; the attention file holds the forward "
                          "direction only", path=path, hint="use --sym none, or save both directions")


def settings_line(settings: dict) -> str:
    keys = ("model_type", "sym", "decoder", "layer", "head", "shift", "teacher", "readout", "smoothgrad")
    return ", ".join(f"{k}={settings[k]}" for k in keys if settings.get(k) is not None
                     and not (k == "readout" and settings[k] == READOUT))


def pred_panels(preds, index: int, src: list[str], tgt: list[str], gold: Alignment | None,
                under: Panel | None = None, options=None) -> list[Panel]:
    """One panel per prediction file: its links for pair ``index`` over ``under``'s matrix (a model's
    attention), or on a blank grid; each titled with its file; ``options``: how to read the files (a
    :class:`~attnalign.eval.scoring.GoldOptions`)."""
    panels = []
    for path in preds:
        links = sorted(read_prediction_line(path, index, len(src), len(tgt), options or GoldOptions()).links)
        matrix = under.matrix if under is not None else np.zeros((len(tgt), len(src)))
        panels.append(Panel(matrix, src, tgt, links, gold, under.eos if under is not None else None,
                            path_text(path), {}, shaded=under is not None))
    return panels


def sentence_panels(
    options: AlignOptions | None,
    *,
    model: str | os.PathLike | None = None,
    src: str | None = None,
    tgt: str | None = None,
    corpus: str | os.PathLike | None = None,
    index: int | None = None,
    attention: str | os.PathLike | None = None,
    gold: str | os.PathLike | None = None,
    gold_options=None,
    compare: bool = False,
    all_layers: bool = False,
    all_heads: bool = False,
    show_eos: bool = False,
    lowercase: bool | None = None,
    encoding: str = "utf-8",
    preds=(),
    pred_options=None,
    outputs: dict | None = None,
) -> list[Panel]:
    """What ``plot sentence`` draws: the pair typed as ``src``/``tgt`` strings, pair ``index``
    (0-based) of a corpus (``src``/``tgt`` files or ``corpus``), or pair ``index`` of a saved
    ``attention`` file; with ``gold`` (and ``index``) that gold sentence overlaid; with ``preds``
    (alignment files) the links of their line ``index`` beside, over the model's attention where a model
    or an attention file is given, else on the pair's blank grid. A model's links are those ``align
    corpus`` writes for the pair (of the corpus, or of the pair alone when typed), its teacher included
    (:func:`model_panels`); ``outputs``: the run's output paths."""
    gold_pair = None
    if gold is not None:
        if index is None:
            raise OptionError("--gold needs --index (which gold sentence to draw)")
        golds, _ = read_gold(gold, gold_options or GoldOptions(encoding=encoding))
        if index >= len(golds):
            raise AttnAlignError(f"the gold has {len(golds)} sentences; --index {index} is past its end")
        gold_pair = golds[index]
    if preds and (index is None or all_layers or all_heads):
        raise OptionError("--pred draws line --index N of each alignment file beside the others"
                          + ("" if index is None else "; it does not go with --layer all / --head all"),
                          hint="give --index N with the corpus (--src/--tgt files or --corpus)")
    if attention is not None:
        if index is None:
            raise OptionError("--attention needs --index (which pair to draw)")
        if all_layers or all_heads:
            raise OptionError("--layer all / --head all draw a model's layers and heads; a saved attention "
                              "file holds one matrix per pair", hint="plot from the model (--model)")
        panels = saved_panels(attention, index, options, gold=gold_pair, compare=compare and not preds,
                              show_eos=show_eos)
        p = panels[0]
        return panels + pred_panels(preds, index, p.src, p.tgt, gold_pair, p, pred_options)
    if model is None and not preds:
        raise OptionError("give --model DIR (or --attention FILE, or --pred FILE with --index)")
    if model is not None:
        from ..nmt.checkpoint import model_lowercase

        lower = model_lowercase(model, lowercase)
    else:
        lower = bool(lowercase)
    pairs = None
    if index is not None:
        pairs = open_corpus(src, tgt, corpus, encoding=encoding, lowercase=lower)
        if index < 0 or index >= len(pairs):
            raise OptionError(f"--index {index} is out of range: the corpus has {len(pairs)} pairs")
        s, t = next(p for k, p in enumerate(pairs) if k == index)
    else:
        if src is None or tgt is None:
            raise OptionError('give the pair as --src "..." --tgt "..." (or --index N with files)')
        for name, text in (("--src", src), ("--tgt", tgt)):
            if path_text(text) != text:  # bytes of another encoding: Python keeps them as surrogates
                raise OptionError(f"the {name} sentence is not UTF-8 text ({path_text(text)[:60]!r})",
                                  hint="type it in UTF-8, or give it in a file with --index N and --encoding")
        s, t = tokenize(src, lower), tokenize(tgt, lower)
    if max(len(s), len(t)) > MAX_LENGTH:
        raise OptionError(f"the pair has {len(s):,} source and {len(t):,} target words; plot sentence draws "
                          f"pairs of up to {MAX_LENGTH} words a side", hint="choose another --index")
    if model is None:
        return pred_panels(preds, index, s, t, gold_pair, options=pred_options)
    panels = model_panels(model, s, t, options, gold=gold_pair, compare=compare and not preds,
                          all_layers=all_layers, all_heads=all_heads, show_eos=show_eos, corpus=pairs,
                          index=index or 0, outputs=outputs)
    return panels + pred_panels(preds, index, s, t, gold_pair, panels[0], pred_options)


def sentence_figure(panels: list[Panel], grid: bool, style=None):
    """The matplotlib figure of ``plot sentence``'s panels (a layer x head grid when ``grid``) in
    ``style`` (:class:`~attnalign.eval.plot.FigureStyle`; None: the defaults)."""
    cols = panels[0].settings.get("grid_cols") if grid else (2 if len(panels) == 4 else None)
    return figure_for(panels, cols=cols, compact=grid,
                      suptitle=settings_text(shared_settings(panels)) if len(panels) > 1 else "", style=style)


def explorer_views(options: AlignOptions | None, panels: list[Panel], request: dict) -> list[Panel]:
    """What ``plot sentence --html`` lets a person switch between: ``panels`` (what
    :func:`sentence_panels` gave for ``request``, its keyword arguments) and, where a model or an
    attention file is read for one matrix, both directions with their symmetrizations and, from a model,
    the pair as each other readout it can give reads it."""
    views = list(panels)
    if options is None or request.get("compare") or request.get("all_layers") or request.get("all_heads"):
        return views
    views += sentence_panels(options, **{**request, "compare": True, "preds": ()})
    if request.get("attention") is None:
        for name in READOUTS:
            if name != options.readout:
                try:
                    views += sentence_panels(replace(options, readout=name, smoothgrad=0),
                                             **{**request, "preds": ()})
                except OptionError:  # a readout this model cannot give (saliency without a translation
                    continue  # output) is left out; what the person asked for was drawn above
    return views
