"""The report's tables (pandas): scores, per sentence, by length, word pairs, EOS losses; and the
gallery's choice of sentences."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..data.corpus import Pairs
from ..eval.metrics import Counts
from ..eval.significance import Bootstrap, intervals
from .sweep import Result


def write_tables(out: Path, results: list[Result], best: Result, pairs: Pairs, gold, top: int) -> dict:
    """scores.csv, per_sentence.csv, by_length.csv, wrong_pairs.csv, missed_pairs.csv; the frames."""
    import pandas as pd

    weights = Bootstrap().resamples(len(gold)) if len(gold) else None

    def interval(r: Result) -> dict:
        if weights is None:
            return {}
        iv = intervals(r.per_sentence, weights)["aer"]
        return {"aer_low": iv.low, "aer_high": iv.high}

    rows = [
        {
            "configuration": r.config.name,
            "layer": r.config.layer,
            "shift": r.config.shift,
            "decoder": r.config.decoder,
            "sym": r.config.sym,
            **r.total.as_dict(),
            **interval(r),
            "best": r is best,
        }
        for r in results
    ]
    scores = pd.DataFrame(rows).sort_values("aer", kind="stable", ignore_index=True)  # as on the page
    scores.round(6).to_csv(out / "scores.csv", index=False)  # fractions without float noise
    per = pd.DataFrame(
        [
            {"sentence": k + 1, "index": k, "src_len": len(s), "tgt_len": len(t), **c.as_dict()}
            for k, ((s, t), c) in enumerate(zip(pairs, best.per_sentence, strict=True))
        ]
    )
    per.drop(columns=["sentences"]).round(6).to_csv(out / "per_sentence.csv", index=False)
    bins = [0, 5, 10, 15, 20, 30, 40, 60, 10**6]
    labels = ["1-5", "6-10", "11-15", "16-20", "21-30", "31-40", "41-60", "61+"]
    per["length"] = pd.cut(per.tgt_len, bins=bins, labels=labels)
    by_len = []
    for lab, grp in per.groupby("length", observed=True):
        c = sum((best.per_sentence[k] for k in grp["index"]), Counts())
        by_len.append({"length": lab, **c.as_dict()})
    by_length = pd.DataFrame(by_len)
    by_length.round(6).to_csv(out / "by_length.csv", index=False)
    wrong, missed = word_pairs(best, pairs, gold)
    frames = {"scores": scores, "by_length": by_length}
    for name, counter in (("wrong_pairs", wrong), ("missed_pairs", missed)):
        frames[name] = pd.DataFrame([{"source": a, "target": b, "count": n}
                                     for (a, b), n in counter.most_common(top)])
        frames[name].to_csv(out / f"{name}.csv", index=False)
    return frames


def word_pairs(result: Result, pairs: Pairs, gold) -> tuple[Counter, Counter]:
    """``result``'s wrongly linked word pairs (links outside the gold's possible ones) and the sure gold
    pairs it missed, counted by (source word, target word)."""
    wrong, missed = Counter(), Counter()
    for (s, t), lk, g in zip(pairs, result.links, gold, strict=True):
        for i, j in lk:
            if (i, j) not in g.possible:
                wrong[(s[i], t[j])] += 1
        for i, j in g.sure - {tuple(x) for x in lk}:
            missed[(s[i], t[j])] += 1
    return wrong, missed


def eos_losses(fwd, pairs: Pairs, gold, top: int):
    """The target words whose forward attention puts more on the source EOS than on any source word (an
    argmax reads that as "no link") although the gold links them: per word, how often, and how often it
    occurs with a gold link; the most frequent first."""
    import pandas as pd

    lost, linked = Counter(), Counter()
    for (m, eos), (_, t), g in zip(fwd, pairs, gold, strict=True):
        gold_tgt = {j for _, j in g.sure}
        for j in gold_tgt:
            linked[t[j]] += 1
            if m.size and eos[j] > m[j].max():
                lost[t[j]] += 1
    return pd.DataFrame([{"target word": w, "to EOS": n, "gold-linked": linked[w]}
                         for w, n in lost.most_common(top)], columns=["target word", "to EOS", "gold-linked"])


def gallery_order(best: Result, pairs: Pairs, n: int) -> dict[str, list[int]]:
    """The gallery's sentences (2 words a side at least): ``worst``, the ``n`` with the most errors
    (wrong links and missed sure links; then the higher AER) first; then ``best``, the ``n`` others with
    the fewest errors, the longest first."""
    eligible = [k for k in range(len(pairs)) if len(pairs[k][0]) >= 2 and len(pairs[k][1]) >= 2]

    def errors(k: int) -> int:
        c = best.per_sentence[k]
        return (c.hyp - c.hyp_possible) + (c.sure - c.hyp_sure)

    worst = sorted((k for k in eligible if errors(k)),
                   key=lambda k: (-errors(k), -best.per_sentence[k].aer, k))[:n]
    rest = sorted(set(eligible) - set(worst),
                  key=lambda k: (errors(k), best.per_sentence[k].aer, -len(pairs[k][1]), k))
    return {"worst": worst, "best": rest[:n]}


