#!/usr/bin/env python3
"""The student's cost against its quality on this machine: variants of ``train --preset align`` run end
to end (``train``, then ``align corpus`` with its default and with ``--teacher off``), beside the
statistical teacher alone and eflomal on the same corpus in the same run.

    python bench/frontier.py --sizes 10000 --variant "preset=" --variant "e2=--epochs 2"
    python bench/frontier.py --sizes 40000 --variant "e2=--epochs 2" --peers teacher
    python bench/frontier.py --peers --variant "e2-w8=--epochs 2 | --teacher-weight 0.8"
    python bench/frontier.py --pair roen --peers teacher --variant "preset=" --variant "e2=--epochs 2"
    python bench/frontier.py --plot frontier_10k frontier_40k   # one plot of CSVs already written

Corpora: 10,000 is the En-Fr protocol corpus of bench/quality.py (the 447 test and 37 trial sentences
lower-cased, then the 10,000 training pairs); larger sizes bench/scale.py's (the test sentences, the trial
ones, then the first N raw Hansards pairs). Each row: seconds and peak memory of each stage (a fresh
process each, its children counted), AER on the 447 test sentences with its 95% interval (1,000
bootstrap resamples of the sentences), and on the 37 trial sentences, which choose between variants;
a model is trained once for its options and the package's code (kept under bench/work/frontier, named by
both) and read by
every variant that aligns it another way;
the default output's difference to the ``--baseline`` variant's, and to the teacher alone's and
eflomal's where they ran, by the paired bootstrap. ``--peers``:
``teacher`` (``align statistical`` at its defaults, which is the preset's teacher) and ``eflomal`` (pip
install eflomal; its symmetrization chosen on the trial sentences).

Writes bench/results/NAME.csv (one row per run, rewritten as each finishes) and NAME.png (default AER
against end-to-end seconds). A benchmark: it prints numbers and asserts nothing; without the data it
says so and exits 0.
"""

from __future__ import annotations

import argparse
import csv
import functools
import hashlib
import json
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import ROOT, emit, parse_result  # noqa: E402

WORK = ROOT / "bench" / "work" / "frontier"
N_TEST, N_TRIAL = 447, 37
EFLOMAL_SYMS = ("intersection", "grow-diag", "grow-diag-final-and")
OTHER_PAIRS = ("roen", "esen")  # --pair: the gold sets beside En-Fr (bench/quality.py's corpora)


def corpus(n: int | str) -> tuple[Path, Path]:
    """The corpus of ``n`` training pairs after the 447 test and 37 trial sentences (10,000: the En-Fr
    protocol corpus); ``roen`` or ``esen``: that pair's protocol corpus (its test sentences first)."""
    if n == 10000 or n in OTHER_PAIRS:
        import quality

        d = quality.build("enfr" if n == 10000 else n)["dir"]
        return d / "corpus.src", d / "corpus.tgt"
    import scale

    return scale.build(n, trial_inside=True)


@functools.cache
def gold(n: int | str, gold_set: str) -> tuple[int, list]:
    """The first line in corpus ``n`` of a gold set's sentences, and their gold alignments; ``trial`` of
    a pair without a trial set: none."""
    if n not in OTHER_PAIRS:
        import scale

        return (0 if gold_set == "test" else N_TEST), scale.gold(gold_set)
    if gold_set == "trial":
        return 0, []
    import quality

    from attnalign.data.alignments import read_alignments
    from attnalign.data.corpus import read_corpus

    info = quality.build(n)
    pairs = read_corpus(*corpus(n))[:info["n_test"]]
    return 0, read_alignments(info["gold"], one_based=info["gold_one_based"],
                              src_lengths=[len(s) for s, _ in pairs],
                              tgt_lengths=[len(t) for _, t in pairs])[0]


def worker(argv: list[str]) -> None:
    """Run one command in this process (``attnalign ARGS`` or ``eflomal SRC TGT FWD REV``); report its
    wall time and the peak resident memory of it and its children."""
    t0, code = time.perf_counter(), 0
    if argv[0] == "eflomal":
        import eflomal

        src, tgt, fwd, rev = argv[1:]
        with open(src, encoding="utf-8") as s, open(tgt, encoding="utf-8") as g:
            eflomal.Aligner().align(s, g, links_filename_fwd=fwd, links_filename_rev=rev)
    else:
        from attnalign.cli import main as attnalign

        sys.argv = ["attnalign", *argv[1:]]
        try:
            attnalign()
        except SystemExit as e:
            code = e.code or 0
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    emit({"seconds": time.perf_counter() - t0, "peak_rss_mb": max(u.ru_maxrss for u in usage) / 1024,
          "code": code})


def run(*command) -> dict:
    p = subprocess.run([sys.executable, __file__, "--worker", "--", *map(str, command)],
                       capture_output=True, text=True)
    r = parse_result(p.stdout) if "RESULT " in p.stdout else {"code": p.returncode}
    if r["code"]:
        raise SystemExit(f"{' '.join(map(str, command[:3]))} failed:\n{p.stderr[-3000:]}")
    return r


def read_links(path: Path) -> list[list[tuple[int, int]]]:
    return [[tuple(map(int, x.split("-"))) for x in line.split()] for line in path.read_text().splitlines()]


def counts(links: list, n: int | str, gold_set: str) -> list:
    """Per-sentence counts of ``links`` (one line per line of corpus ``n``) against a gold set."""
    from attnalign.data.alignments import Alignment
    from attnalign.eval.metrics import corpus_counts

    start, sentences = gold(n, gold_set)
    return corpus_counts([Alignment.from_links(sorted(x)) for x in links[start:start + len(sentences)]],
                         sentences)


def quality(prefix: str, links: list, n: int | str) -> dict:
    """Test AER with its interval, and trial AER (none without a trial set), in %."""
    from attnalign.eval.metrics import Counts
    from attnalign.eval.significance import Bootstrap, intervals

    test, trial = counts(links, n, "test"), counts(links, n, "trial")
    iv = intervals(test, Bootstrap().weights(len(test)))["aer"]
    return {f"aer_{prefix}": round(100 * sum(test, Counts()).aer, 2),
            f"aer_{prefix}_low": round(100 * iv.low, 2), f"aer_{prefix}_high": round(100 * iv.high, 2),
            f"trial_aer_{prefix}": round(100 * sum(trial, Counts()).aer, 2) if trial else None}


def stage(out: dict, name: str, r: dict) -> None:
    out[f"{name}_s"], out[f"{name}_peak_mb"] = round(r["seconds"], 1), round(r["peak_rss_mb"])


@functools.cache
def code_version() -> str:
    """A hash of the attnalign package's source files (what a trained model depends on)."""
    h = hashlib.sha256()
    for path in sorted((ROOT / "attnalign").rglob("*")):
        if path.suffix in (".py", ".toml"):
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def trained(n: int, extra: list[str], threads: int | None) -> tuple[Path, dict]:
    """The model ``train --preset align`` with ``extra`` makes on corpus ``n``, and its stage's seconds and
    memory: trained once (a seed fixes it), kept under a name made of its options, so that variants
    that differ only in how they align read the same model."""
    from attnalign.training.config_file import preset_values

    src, tgt = corpus(n)
    # the preset's values and the code are part of the name: a model of another preset, or one trained
    # before a change to the code, is not read as this one's
    preset = json.dumps(preset_values("align"), sort_keys=True)
    key = hashlib.sha256(shlex.join(["--threads", str(threads), *extra, preset, code_version()]).encode()
                         ).hexdigest()[:10]
    model = WORK / f"{n}-model-{key}"
    stats = model / "frontier-train.json"
    if stats.is_file():
        return model, json.loads(stats.read_text())
    out: dict = {}
    more = ["--threads", threads] if threads else []
    stage(out, "train", run("attnalign", "train", "--src", src, "--tgt", tgt, "--preset", "align", "--model",
                            model, "--overwrite", "--quiet", *more, *extra))
    stats.write_text(json.dumps(out))
    return model, out


def variant_row(n: int, label: str, extra: list[str], align: list[str], threads: int | None) -> dict:
    """``train --preset align`` with ``extra``, then ``align corpus`` with ``align`` (default, and the
    student alone)."""
    src, tgt = corpus(n)
    model, out = trained(n, extra, threads)
    out = {"pairs": n, "system": label, "train_args": " ".join(extra), "align_args": " ".join(align), **out}
    more = ["--threads", threads] if threads else []
    for name, teacher in (("default", []), ("student", ["--teacher", "off"])):
        pred = WORK / f"{n}-{label}.{name}.align"
        stage(out, f"align_{name}", run("attnalign", "align", "corpus", "--model", model, "--src", src,
                                        "--tgt", tgt, "-o", pred, "--quiet", *more, *align, *teacher))
        out.update(quality(name, read_links(pred), n))
    out["end_to_end_s"] = round(out["train_s"] + out["align_default_s"], 1)
    out["peak_mb"] = max(out["train_peak_mb"], out["align_default_peak_mb"])
    return out


def teacher_row(n: int) -> dict:
    """``align statistical`` at its defaults: the preset's teacher alone."""
    src, tgt = corpus(n)
    pred = WORK / f"{n}-teacher.align"
    out = {"pairs": n, "system": "teacher", "train_args": "align statistical"}
    stage(out, "train", run("attnalign", "align", "statistical", "--src", src, "--tgt", tgt, "-o", pred,
                            "--quiet"))
    out.update(quality("default", read_links(pred), n))
    out["end_to_end_s"], out["peak_mb"] = out["train_s"], out["train_peak_mb"]
    return out


def eflomal_row(n: int) -> dict:
    """eflomal 2 at its defaults, both directions, the symmetrization the trial sentences prefer."""
    from attnalign.decoding.symmetrize import symmetrize
    from attnalign.eval.metrics import Counts

    src, tgt = corpus(n)
    fwd, rev = WORK / f"{n}-eflomal.fwd", WORK / f"{n}-eflomal.rev"
    out = {"pairs": n, "system": "eflomal", "train_args": ""}
    stage(out, "train", run("eflomal", src, tgt, fwd, rev))
    pairs = list(zip(read_links(fwd), read_links(rev), strict=True))
    by_sym = {s: [symmetrize(f, r, s) for f, r in pairs] for s in EFLOMAL_SYMS}
    chooser = "trial" if gold(n, "trial")[1] else "test"  # no trial set: looked at on the test, said so
    sym = min(EFLOMAL_SYMS, key=lambda s: sum(counts(by_sym[s], n, chooser), Counts()).aer)
    out["train_args"] = f"eflomal 2 defaults, {sym} ({chooser})"
    (WORK / f"{n}-eflomal.align").write_text("".join(
        " ".join(f"{i}-{j}" for i, j in sorted(links)) + "\n" for links in by_sym[sym]))  # for paired()
    out.update(quality("default", by_sym[sym], n))
    out["end_to_end_s"], out["peak_mb"] = out["train_s"], out["train_peak_mb"]
    return out


def paired(rows: list[dict], baseline: str) -> None:
    """Each variant's default output against the baseline's (``vs_baseline``), and against the teacher
    alone and eflomal where they ran in this invocation (``vs_teacher``, ``vs_eflomal``), on the test
    sentences (paired bootstrap, the same resamples for each)."""
    from attnalign.eval.significance import Bootstrap, paired_test

    for n in {r["pairs"] for r in rows}:
        ran = {r["system"] for r in rows if r["pairs"] == n}
        against = {"baseline": WORK / f"{n}-{baseline}.default.align"}
        against |= {p: WORK / f"{n}-{p}.align" for p in ("teacher", "eflomal") if p in ran}
        for name, path in against.items():
            if not path.exists():
                continue
            base_counts = counts(read_links(path), n, "test")
            weights = Bootstrap().weights(len(base_counts))
            for r in rows:
                if r["pairs"] == n and r["system"] not in ("teacher", "eflomal"):
                    mine = counts(read_links(WORK / f"{n}-{r['system']}.default.align"), n, "test")
                    res = paired_test(base_counts, mine, weights)
                    r.update({f"vs_{name}": round(100 * res.delta, 2),
                              f"vs_{name}_low": round(100 * res.interval.low, 2),
                              f"vs_{name}_high": round(100 * res.interval.high, 2),
                              f"vs_{name}_p": res.p_value})


def write(name: str, rows: list[dict]) -> None:
    """The CSV with every column any row has."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    res = ROOT / "bench" / "results"
    res.mkdir(parents=True, exist_ok=True)
    with open(res / f"{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def plot(rows: list[dict], path: Path) -> None:
    """Default AER (its interval as a bar) against end-to-end seconds, one marker per corpus size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups = sorted({str(r["pairs"]) for r in rows}, key=lambda n: (not n.isdigit(), n.zfill(9)))
    for i, n in enumerate(groups):
        for r in (r for r in rows if str(r["pairs"]) == n):
            peer = r["system"] in ("teacher", "eflomal")
            x, y = float(r["end_to_end_s"]), float(r["aer_default"])
            err = [[y - float(r["aer_default_low"])], [float(r["aer_default_high"]) - y]]
            ax.errorbar(x, y, yerr=err, fmt="s" if peer else "o", color=f"C{i}", alpha=0.6 if peer else 1,
                        capsize=2, label=None)
            ax.annotate(r["system"], (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
        ax.plot([], [], "o", color=f"C{i}", label=f"{int(n):,} En-Fr pairs" if n.isdigit() else n)
    ax.set_xscale("log")
    ax.set_xlabel("seconds end to end (train + align corpus; peers: their one command)")
    ax.set_ylabel("AER % on the test sentences")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000], help="En-Fr corpus sizes")
    ap.add_argument("--pair", choices=("enfr", *OTHER_PAIRS), default="enfr",
                    help="roen or esen: that gold set's protocol corpus instead of En-Fr's sizes (no trial "
                         "set: eflomal's symmetrization is looked at on the test)")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=OPTIONS[|ALIGN]",
                    help="options added to train --preset align, and after a | those added to each align "
                         "corpus (repeatable; variants of the same training options share the model)")
    ap.add_argument("--peers", nargs="*", default=["teacher", "eflomal"], choices=["teacher", "eflomal"])
    ap.add_argument("--baseline", default="preset", help="the variant the others are paired against")
    ap.add_argument("--threads", type=int, default=None, help="--threads of each attnalign command")
    ap.add_argument("--results", default="frontier", help="name of the results files in bench/results")
    ap.add_argument("--plot", nargs="+", metavar="NAME",
                    help="draw NAME.csv files already written; run nothing")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.worker:
        return worker(args.command)
    res = ROOT / "bench" / "results"
    if args.plot:
        rows = []
        for name in args.plot:
            with open(res / f"{name}.csv", newline="") as f:
                rows += list(csv.DictReader(f))
        return plot(rows, res / f"{args.plot[0]}.png")
    WORK.mkdir(parents=True, exist_ok=True)
    # the teacher's loops are compiled once per installation (numba caches them): not inside a row's time
    run("attnalign", "align", "statistical", "--src", ROOT / "sample_data" / "train.en", "--tgt",
        ROOT / "sample_data" / "train.fr", "-o", WORK / "warm-up.align", "--quiet")
    variants = [v.split("=", 1) if "=" in v else (v, "") for v in args.variant]
    sizes = args.sizes if args.pair == "enfr" else [args.pair]
    todo = [(n, p, None, None) for n in sizes for p in args.peers]
    todo += [(n, label, *map(shlex.split, (extra.split("|", 1) + [""])[:2])) for n in sizes
             for label, extra in variants]
    rows = []
    for n, label, extra, align in todo:
        try:
            if extra is None:
                rows.append(teacher_row(n) if label == "teacher" else eflomal_row(n))
            else:
                rows.append(variant_row(n, label, extra, align, args.threads))
        except SystemExit as e:  # one failed row does not lose the others
            print(f"FAILED: {n} {label}: {e}", file=sys.stderr, flush=True)
            continue
        paired(rows, args.baseline)
        print(json.dumps(rows[-1]), flush=True)
        write(args.results, rows)
    if rows:
        plot(rows, res / f"{args.results}.png")


if __name__ == "__main__":
    main()
