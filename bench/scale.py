#!/usr/bin/env python3
"""The statistical aligner as the corpus grows: wall time, peak memory, pairs/s and AER on the 447
English-French Hansards test sentences, for 10k, 40k, 160k and 310k pairs of the raw ISI Hansards,
with eflomal (pip install eflomal) on the same files in the same run; ``--systems preset``: the
``--preset align`` model (``preset-fast``: ``--preset align-fast``; ``preset-st``: ``--preset align
--self-train 1 --self-train-epochs 1.5``; ``preset-st3``: 3 passes in the second round;
``preset-st3-s3``: the same with ``--guide-samplers 3``) trained on
the same corpora (its own process tree: the teacher, both directions, then ``align corpus`` with and
without its teacher, and the student alone on the 37 trial sentences as new sentences, which choose;
``--epochs``: one such run for each number of passes; hours beyond 40k pairs on 2 cores).

    python bench/scale.py                      # every size, attnalign's default and eflomal
    python bench/scale.py --sizes 10000 40000 --systems attnalign
    python bench/scale.py --sizes 40000 --systems preset --epochs 7 auto   # the student's passes
    python bench/scale.py --sizes 40000 --systems preset --trial-inside    # trial aligned as the test

The raw corpus is upper-case, unaccented and untokenized; it is lower-cased, punctuation is split off,
French elisions and contractions are written as the test set writes them (``l' homme`` -> ``le
homme``, ``du`` -> ``de le``, ``aujourd'hui`` -> ``aujourd' hui``) and English ``'s`` is split. The
test sentences keep their tokens and positions; their French accents are folded so that words match
the unaccented corpus. Each corpus is the 447 test pairs (``--trial-inside``: then the 37 trial
pairs, which the preset systems then score inside the corpus instead of as new sentences) followed by
the first N raw pairs (empty lines dropped); a size past the raw corpus's 310k pairs repeats them
(``--sizes 2000000``: about 6.5 times). Each run is a fresh process (its peak RSS is its own); run
this alone on the machine. Writes bench/results/scale.{csv,json} (``--results NAME``:
NAME.{csv,json}). A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import ROOT, emit, parse_result, shared  # noqa: E402
from quality import fold, training_seconds  # noqa: E402

WORK = ROOT / "bench" / "work" / "scale"
RESULTS = ROOT / "bench" / "results"
SIZES = [10_000, 40_000, 160_000, 310_000]
N_TEST = 447

_PUNCT = re.compile(r"""([.,!?;:"()\[\]«»%/*+=-])""")
# French elided articles and pronouns, and contractions, as the EGYPT-tokenized test set writes them
_ELISION = re.compile(r"\b(l|d|j|qu|s|n|m|t|c|jusqu|lorsqu|puisqu|quoiqu)'")
_ELIDED = {"l": "le", "d": "de", "j": "je", "qu": "que", "s": "se", "n": "ne", "m": "me", "t": "te",
           "c": "ce", "jusqu": "jusque", "lorsqu": "lorsque", "puisqu": "puisque", "quoiqu": "quoique"}
_CONTRACTIONS = {"du": "de le", "des": "de les", "au": "a le", "aux": "a les"}


# tokens the test set keeps whole: abbreviations and decimal numbers
_KEEP = re.compile(r"(mr|mrs|ms|dr|st|no|hon|m|mm|mme|p\.m|a\.m)\.|\d+[.,]\d+")


def _split(line: str) -> str:
    """Lower-case and split punctuation off words, abbreviations and decimals kept whole."""
    return " ".join(w if _KEEP.fullmatch(w) else _PUNCT.sub(r" \1 ", w) for w in line.lower().split())


def tok_en(line: str) -> str:
    text = re.sub(r"(\w)'s\b", r"\1 's", _split(line))
    return " ".join(text.split())


def tok_fr(line: str) -> str:
    text = _split(line).replace("aujourd'hui", "aujourd' hui")
    text = _ELISION.sub(lambda m: _ELIDED[m.group(1)] + " ", text)
    return " ".join(_CONTRACTIONS.get(w, w) for w in text.split())


def build(n: int, trial_inside: bool = False) -> tuple[Path, Path]:
    """The corpus of the test pairs and the first ``n`` raw pairs (cached under bench/work/scale);
    ``trial_inside``: the 37 trial pairs between them (``corpus{n}t``), so that the trial sentences
    are aligned as the test ones are, inside the corpus the model learned from."""
    d = shared("enfr-hansards")
    name = f"corpus{n}{'t' if trial_inside else ''}"
    src, tgt = WORK / f"{name}.en", WORK / f"{name}.fr"
    if src.exists() and tgt.exists():
        return src, tgt
    WORK.mkdir(parents=True, exist_ok=True)
    en = [" ".join(x.split()).lower() for x in (d / "test.en").read_text(encoding="utf-8").splitlines()]
    fr = [fold(" ".join(x.split()).lower()) for x in (d / "test.fr").read_text(encoding="utf-8").splitlines()]
    if trial_inside:
        trial = trial_files()
        en += trial[0].read_text(encoding="utf-8").splitlines()
        fr += trial[1].read_text(encoding="utf-8").splitlines()
    raw = d / "isi310k.raw.en", d / "isi310k.raw.fr"
    added = []
    with open(raw[0], encoding="utf-8") as fe, open(raw[1], encoding="utf-8") as ff:
        for a, b in zip(fe, ff, strict=True):
            if len(added) >= n:
                break
            a, b = tok_en(a), tok_fr(fold(b))
            if a and b:
                added.append((a, b))
    whole = len(added)
    while whole and len(added) < n:  # past the raw corpus's end it starts again (the 2M row)
        added += added[:min(whole, n - len(added))]
    en += [a for a, _ in added]
    fr += [b for _, b in added]
    src.write_text("\n".join(en) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(fr) + "\n", encoding="utf-8")
    return src, tgt


@functools.cache
def gold(gold_set: str = "test") -> list:
    """The gold alignments of the 447 test (or 37 trial) sentences (read once)."""
    from attnalign.data.alignments import read_alignments
    from attnalign.data.corpus import read_corpus

    d = shared("enfr-hansards")
    pairs = read_corpus(d / f"{gold_set}.en", d / f"{gold_set}.fr")
    return read_alignments(d / f"{gold_set}.gold.naacl", src_lengths=[len(s) for s, _ in pairs],
                           tgt_lengths=[len(t) for _, t in pairs])[0]


def links_aer(links: list, gold_set: str = "test") -> float:
    """AER in % of one list of links per sentence against :func:`gold`."""
    from attnalign.data.alignments import Alignment
    from attnalign.eval.metrics import Counts, corpus_counts

    ref = gold(gold_set)
    return 100 * sum(corpus_counts([Alignment.from_links(x) for x in links[:len(ref)]], ref), Counts()).aer


def aer(pred: Path, gold_set: str = "test", start: int = 0) -> float:
    """AER in % of the lines of ``pred`` from ``start`` against the gold of the 447 test (or 37 trial)
    sentences."""
    lines = pred.read_text().splitlines()[start:]
    links = [sorted(tuple(map(int, x.split("-"))) for x in line.split()) for line in lines]
    return links_aer(links, gold_set)


def trial_files() -> tuple[Path, Path]:
    """The 37 trial sentences as the corpora write the test ones (lower-cased, French accents folded):
    the student alone aligns them as new sentences, for selection (the test sentences only report)."""
    d = shared("enfr-hansards")
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / "trial.en", WORK / "trial.fr"
    for path, src, folded in ((out[0], d / "trial.en", False), (out[1], d / "trial.fr", True)):
        lines = [" ".join(x.split()).lower() for x in src.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join((fold(x) if folded else x) + "\n" for x in lines), encoding="utf-8")
    return out


# --systems: attnalign train --preset VALUE and these options
PRESETS = {"preset": ("align", []), "preset-fast": ("align-fast", []),
           "preset-tf": ("align", ["--model-type", "transformer"]),
           "preset-st": ("align", ["--self-train", "1", "--self-train-epochs", "1.5"]),
           "preset-st3": ("align", ["--self-train", "1", "--self-train-epochs", "3"]),
           "preset-st3-s3": ("align", ["--self-train", "1", "--self-train-epochs", "3",
                                       "--guide-samplers", "3"])}


def round_seconds(model: Path) -> dict:
    """Each self-training round's training time (:func:`quality.training_seconds`)."""
    import pandas as pd

    rounds = sorted(set(pd.read_csv(model / "log.csv")["round"].fillna(0).astype(int)))
    return {f"round{k}_s": training_seconds(model, k) for k in rounds}


def worker(args) -> None:
    """One run in a fresh process: align, then report time and this process's (and its children's)
    peak RSS."""
    src, tgt, out = Path(args.src), Path(args.tgt), Path(args.out)
    epochs = args.epochs[0]
    extra = {}  # the preset's training time and its student's AER alone
    t, seconds = time.perf_counter(), None
    if args.worker == "attnalign":
        from attnalign.workflows.align_files import align_statistical_files

        align_statistical_files(src=src, tgt=tgt, output=out)
    elif args.worker == "attnalign-2procs":  # torchrun, two processes on this machine
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m",
                        "attnalign", "align", "statistical", "--src", str(src), "--tgt", str(tgt),
                        "-o", str(out), "--quiet"], check=True, capture_output=True)
    elif args.worker in PRESETS:  # attnalign train --preset NAME, then align corpus, as a user runs them
        model, run = WORK / f"{args.worker}-{src.stem}-e{epochs}", [sys.executable, "-m", "attnalign"]
        data = ["--src", str(src), "--tgt", str(tgt)]
        align = [*run, "align", "corpus", "--model", str(model), *data, "--quiet"]
        name, options = PRESETS[args.worker]
        subprocess.run([*run, "train", *data, "--preset", name, *options, "--model", str(model),
                        "--epochs", epochs, "--overwrite", "--quiet"], check=True, capture_output=True)
        extra["train_s"] = time.perf_counter() - t
        extra.update(round_seconds(model))
        subprocess.run([*align, "--output", str(out)], check=True, capture_output=True)
        seconds = time.perf_counter() - t  # training and align corpus's default, with its teacher
        subprocess.run([*align, "--output", f"{out}.student", "--teacher", "off"], check=True,
                       capture_output=True)
        extra["student_aer"] = aer(Path(f"{out}.student"))
        if args.trial_inside:  # the trial sentences follow the test ones in the corpus
            extra["trial_student_aer"] = aer(Path(f"{out}.student"), "trial", N_TEST)
            extra["trial_aer"] = aer(out, "trial", N_TEST)
        else:
            trial = trial_files()
            subprocess.run([*run, "align", "corpus", "--model", str(model), "--src", str(trial[0]),
                            "--tgt", str(trial[1]), "--teacher", "off", "--output", f"{out}.trial",
                            "--quiet"],
                           check=True, capture_output=True)
            extra["trial_student_aer"] = aer(Path(f"{out}.trial"), "trial")
    else:
        import eflomal

        from attnalign.decoding.symmetrize import symmetrize

        with open(src, encoding="utf-8") as s, open(tgt, encoding="utf-8") as g:
            eflomal.Aligner().align(s, g, links_filename_fwd=f"{out}.fwd", links_filename_rev=f"{out}.rev")

        def read(p):
            return [[tuple(map(int, x.split("-"))) for x in line.split()]
                    for line in Path(p).read_text().splitlines()]

        links = [sorted(symmetrize(f, r, "grow-diag-final-and"))
                 for f, r in zip(read(f"{out}.fwd"), read(f"{out}.rev"), strict=True)]
        out.write_text("".join(" ".join(f"{i}-{j}" for i, j in x) + "\n" for x in links))
    seconds = seconds or time.perf_counter() - t
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)  # every process's CPU time, torchrun's ranks too
    emit({"seconds": seconds, "cpu_s": cpu, "peak_rss_mb": max(u.ru_maxrss for u in usage) / 1024, **extra})


def exponent(rows: list[dict], key: str) -> float | None:
    """The slope of log(key) against log(pairs): 1 is linear."""
    pts = [(math.log(r["pairs"]), math.log(r[key])) for r in rows if r[key] > 0]
    if len(pts) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES, help="raw pairs added to the test pairs")
    ap.add_argument("--systems", nargs="+", default=["attnalign", "eflomal"],
                    choices=["attnalign", "attnalign-2procs", "eflomal", *PRESETS],
                    help="attnalign-2procs: the default under torchrun with 2 processes (peak RSS: one's); "
                         "preset: attnalign train --preset align, then align corpus with its default "
                         "(the student and its teacher) and --teacher off (the student alone); preset-fast: "
                         "the same with --preset align-fast; preset-st: --preset align --self-train 1 "
                         "--self-train-epochs 1.5; preset-st3: the same with --self-train-epochs 3; "
                         "preset-st3-s3: that with --guide-samplers 3; preset-tf: --preset align with "
                         "--model-type transformer")
    ap.add_argument("--epochs", nargs="+", default=["auto"],
                    help="preset systems: train --epochs VALUE, a run for each (auto: the preset's passes)")
    ap.add_argument("--results", default="scale", help="name of the results files in bench/results")
    ap.add_argument("--trial-inside", action="store_true",
                    help="put the 37 trial pairs in the corpus after the test pairs (corpus<N>t): the "
                         "trial sentences are then aligned as the test ones are, by a model that learned "
                         "from them")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--src", help=argparse.SUPPRESS)
    ap.add_argument("--tgt", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.worker:
        return worker(args)
    rows = []
    for n in args.sizes:
        src, tgt = build(n, args.trial_inside)
        pairs = len(src.read_text(encoding="utf-8").splitlines())
        runs = [(s, e) for s in args.systems for e in (args.epochs if s in PRESETS else [None])]
        for system, epochs in runs:
            tag = "" if epochs in (None, "auto") else f"-e{epochs}"
            out = WORK / f"{system}{n}{'t' if args.trial_inside else ''}{tag}.align"
            cmd = [sys.executable, __file__, "--worker", system, "--src", str(src), "--tgt", str(tgt),
                   "--out", str(out), "--epochs", epochs or "auto", *["--trial-inside"] * args.trial_inside]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                print(f"{system} at {n}: failed\n{p.stderr[-2000:]}", file=sys.stderr)
                continue
            r = parse_result(p.stdout)
            row = {"system": system, "pairs": pairs, "epochs": epochs, "seconds": round(r["seconds"], 1),
                   "cpu_s": round(r["cpu_s"], 1),
                   "pairs_per_s": round(pairs / r["seconds"]), "peak_rss_mb": round(r["peak_rss_mb"]),
                   "aer": round(aer(out), 2),
                   "train_s": round(r["train_s"], 1) if "train_s" in r else None,
                   "student_aer": round(r["student_aer"], 2) if "student_aer" in r else None,
                   "trial_student_aer": round(r["trial_student_aer"], 2) if "trial_student_aer" in r
                   else None, **({"trial_aer": round(r["trial_aer"], 2)} if "trial_aer" in r else {}),
                   **{k: round(v, 1) for k, v in r.items() if k.startswith("round")}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    for system in args.systems:
        mine = [r for r in rows if r["system"] == system and r["epochs"] in (None, args.epochs[0])]
        for key in ("seconds", "peak_rss_mb"):
            e = exponent(mine, key)
            if e is not None:
                print(f"{system}: {key} grows as pairs^{e:.2f}")
    common.write_rows(args.results, rows)


if __name__ == "__main__":
    main()
