"""The real gold sets in ../shared/data parse, fit their text, and score AER 0 against themselves.

Skipped, with the reason, where ../shared/data is absent.
"""

from __future__ import annotations

import pytest
from helpers import shared_or_skip

from attnalign.eval.scoring import GoldOptions, score_files

# (gold, text, options, expected sentences, sure, possible) -- the counts are those of the files
GOLDS = [
    ("enfr-hansards/test.gold.naacl", ("enfr-hansards/test.en", "enfr-hansards/test.fr"),
     GoldOptions(), 447, 4038, 17438),
    ("enfr-hansards/trial.gold.naacl", ("enfr-hansards/trial.en", "enfr-hansards/trial.fr"),
     GoldOptions(), 37, 338, 1784),
    ("roen-wpt03/test.gold.talp", ("roen-wpt03/test.ro-en",),
     GoldOptions(fmt="pharaoh", one_based=True), 248, 6198, 6198),
    ("esen-europarl/dev.gold.key", ("esen-europarl/dev.en", "esen-europarl/dev.es"),
     GoldOptions(), 200, 5920, 5920),
]


@pytest.mark.parametrize(("gold", "text", "options", "n", "sure", "possible"), GOLDS,
                         ids=[g[0] for g in GOLDS])
def test_real_gold_against_itself(gold, text, options, n, sure, possible):
    g = shared_or_skip(gold)
    paths = [shared_or_skip(t) for t in text]
    kw = {"corpus": paths[0]} if len(paths) == 1 else {"src": paths[0], "tgt": paths[1]}
    report = score_files(g, [g], options, pred_one_based=options.one_based, **kw)
    total = report.systems[0].total
    assert total.aer == 0.0 and total.sentences == n
    assert (total.sure, total.possible) == (sure, possible)
