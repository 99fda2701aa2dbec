"""The error breakdown (attnalign.eval.breakdown and `score --breakdown`), counted by hand."""

from __future__ import annotations

import json

from helpers import write
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.data.alignments import Alignment
from attnalign.eval.breakdown import FREQUENCY_BANDS, breakdown, distance_band

runner = CliRunner()

# "not a car" -> "ne pas une voiture": gold 0-0 (sure), 0-1 (sure): a 1-many link pair; 1-2 sure 1-1;
# 2-3 possible 1-1; the hypothesis has 0-0 (right), 1-2 (right), 2-2 (extra between aligned words) and
# 2-3 (right, possible).
SRC, TGT = ["not", "a", "car"], ["ne", "pas", "une", "voiture"]
GOLD = Alignment(frozenset({(0, 0), (0, 1), (1, 2)}), frozenset({(2, 3)}))
HYP = Alignment.from_links([(0, 0), (1, 2), (2, 2), (2, 3)])


def bands(hyp=HYP, gold=GOLD, freq=None):
    rows = breakdown([hyp], [gold], [(SRC, TGT)], freq or {"not": 1, "a": 50, "car": 200})
    return {(b.dimension, b.band): b.counts for b in rows}


def test_link_types_by_hand():
    b = bands()
    one_many = b[("type", "1-many")]  # (0, 0) and (0, 1): "not" has two links, each target word one
    assert (one_many.hyp, one_many.sure, one_many.hyp_sure) == (1, 2, 1)
    assert one_many.recall == 0.5
    one_one = b[("type", "1-1")]  # (1, 2) sure and (2, 3) possible, both found
    assert (one_one.hyp, one_one.sure, one_one.possible, one_one.hyp_possible) == (2, 1, 2, 2)
    extra = b[("type", "extra: aligned words")]  # (2, 2): "car" and "une" both have gold links
    assert (extra.hyp, extra.sure, extra.hyp_possible) == (1, 0, 0)
    assert b[("type", "extra: unaligned word")].hyp == 0
    # every predicted link lies in one band of each dimension
    for dim in ("type", "frequency", "distance"):
        assert sum(c.hyp for (d, _), c in b.items() if d == dim) == 4
        assert sum(c.sure for (d, _), c in b.items() if d == dim) == 3


def test_unaligned_word_and_many_to_one():
    gold = Alignment(frozenset({(0, 0), (1, 0)}))  # "not" and "a" both to "ne": many-1
    hyp = Alignment.from_links([(0, 0), (2, 3)])  # "voiture" has no gold link
    b = bands(hyp, gold)
    assert (b[("type", "many-1")].sure, b[("type", "many-1")].hyp_sure) == (2, 1)
    assert b[("type", "extra: unaligned word")].hyp == 1


def test_frequency_bands_use_the_whole_texts_counts():
    b = bands()
    rare, middle, frequent = (b[("frequency", name)] for name in FREQUENCY_BANDS)
    assert (rare.hyp, rare.sure) == (1, 2)  # "not" (once)
    assert (middle.hyp, middle.sure) == (1, 1)  # "a" (50 times)
    assert (frequent.hyp, frequent.possible) == (2, 1)  # "car" (200 times): (2, 2) and (2, 3)


def test_distance_from_the_scaled_diagonal():
    # 3 source words, 4 target words: target word j sits at source position j * 3 / 4
    assert distance_band(0, 0, 3, 4) == "0-1"
    assert distance_band(2, 0, 3, 4) == "2-3"
    assert distance_band(0, 3, 3, 4) == "2-3"  # |0 - 2.25| rounds to 2
    assert distance_band(9, 0, 10, 10) == "8+" and distance_band(5, 0, 10, 10) == "4-7"


def test_score_breakdown_cli(tmp_path):
    src = write(tmp_path / "s", "not a car\na car\n")
    tgt = write(tmp_path / "t", "ne pas une voiture\nune voiture\n")
    gold = write(tmp_path / "g", "0-0 0-1 1-2 2p3\n0-0 1-1\n")
    pred = write(tmp_path / "p", "0-0 1-2 2-2 2-3\n0-0 1-1\n")
    r = runner.invoke(app, ["score", str(gold), str(pred), "--src", str(src), "--tgt", str(tgt),
                            "--breakdown", "--json"])
    assert r.exit_code == 0, r.stderr
    rows = {(x["dimension"], x["band"]): x for x in json.loads(r.stdout)["breakdown"]}
    assert rows[("type", "1-many")]["sure"] == 2 and rows[("type", "1-many")]["hits_sure"] == 1
    assert rows[("type", "1-1")]["links"] == 4  # (1, 2), (2, 3) and the second pair's two
    # a type band's links are all gold links (or none): no precision there, where other bands have one
    assert all(x["precision"] is None for (dim, _), x in rows.items() if dim == "type")
    assert rows[("distance", "0-1")]["precision"] == 5 / 6
    table = runner.invoke(app, ["score", str(gold), str(pred), "--corpus", str(write(
        tmp_path / "c", "not a car ||| ne pas une voiture\na car ||| une voiture\n")), "--breakdown"])
    assert table.exit_code == 0, table.stderr
    assert "Breakdown of" in table.stdout and "extra: aligned words" in table.stdout
