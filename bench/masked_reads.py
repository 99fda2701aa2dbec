#!/usr/bin/env python3
"""The masked-query experiment (``--config agree-fert-head-sp-e5-b2k-d0-mask`` of bench/quality.py,
trained first): the student alone at the default decoding on a pair's test set (and the En-Fr trial
set) for each read of the head: its own query, the masked one, their mean, their product (the read it
was trained and selected with). A benchmark: it prints numbers and asserts nothing.

    python bench/masked_reads.py --pair enfr
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from quality import build  # noqa: E402

from attnalign.data.alignments import Alignment, read_alignments  # noqa: E402
from attnalign.data.corpus import read_corpus  # noqa: E402
from attnalign.eval.metrics import Counts, corpus_counts  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402

CONFIG = "agree-fert-head-sp-e5-b2k-d0-mask"


def gold_of(path, pairs, one_based=None):
    return read_alignments(path, one_based=one_based, src_lengths=[len(s) for s, _ in pairs],
                           tgt_lengths=[len(t) for _, t in pairs])[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="enfr", choices=["enfr", "roen", "esen"])
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    info = build(args.pair)
    pairs = read_corpus(info["dir"] / "corpus.src", info["dir"] / "corpus.tgt")
    test = pairs[:info["n_test"]]
    sets = [("test", test, gold_of(info["gold"], test, info["gold_one_based"]))]
    if info["dev_gold"] is not None:
        start, n = info["dev"]
        trial = pairs[start:start + n]
        sets.append(("trial", trial, gold_of(info["dev_gold"], trial)))
    aligner = Aligner(info["dir"] / CONFIG, AlignOptions(device="cpu", teacher="off"))
    for read in ("head", "masked", "mean", "product"):
        for lm in (aligner.forward, aligner.reverse):
            lm.model.align_head.read = read
        row = [read]
        for name, some, gold in sets:
            hyps = [Alignment.from_links(p.links) for p in aligner.align_pairs(some)]
            row.append(f"{name} {100 * sum(corpus_counts(hyps, gold), Counts()).aer:.2f}")
        print(*row, flush=True)


if __name__ == "__main__":
    main()
