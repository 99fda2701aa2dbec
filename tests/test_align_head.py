"""The alignment head: guide targets with NULL on EOS, shapes and masks, a known-answer task that the
translation attention cannot solve and the head can, checkpoints, and the errors around it."""

from __future__ import annotations

import json
import random

import pytest
import torch
from helpers import SAMPLE, write
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.data.alignments import Alignment
from attnalign.decoding.policy import choose_decoding
from attnalign.errors import AttnAlignError, AttnAlignWarning
from attnalign.eval.metrics import Counts, corpus_counts
from attnalign.nmt.aligner import Aligner, AlignOptions
from attnalign.nmt.batching import make_batch
from attnalign.nmt.checkpoint import load_model
from attnalign.nmt.extract import AttentionSpec, corpus_attention
from attnalign.nmt.models.align_head import AlignHead
from attnalign.training import DevSet, TrainOptions, guide_targets, train

RNN_TINY = {"hidden": 64, "emb_dim": 32, "dropout": 0.0, "align_head": True}


def test_guide_targets_put_unlinked_words_on_eos():
    # pair 0: 3 source words, 2 target words; pair 1: 2 source words, 3 target words
    b = make_batch([0, 1], [[5, 6, 7], [5, 6]], [[8, 9], [8, 9, 10]])  # EOS and BOS are added
    links = [[(0, 0), (2, 0)], [(1, 2)]]  # (src token, tgt token)
    plain = guide_targets(b, links)
    assert plain.shape == (2, 4, 4)  # [B, T+1 (padded), S+1 (padded)]
    assert plain[0, 0].tolist() == [0.5, 0.0, 0.5, 0.0]
    assert plain[0, 1].sum() == 0 and plain[1, 0].sum() == 0  # unlinked rows: not supervised
    null = guide_targets(b, links, null_to_eos=True)
    assert null[0, 0].tolist() == [0.5, 0.0, 0.5, 0.0]
    assert null[0, 1].tolist() == [0.0, 0.0, 0.0, 1.0]  # pair 0's EOS is source position 3
    assert null[1, 0].tolist() == [0.0, 0.0, 1.0, 0.0]  # pair 1's EOS is position 2
    assert null[1, 1].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert null[1, 2].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert null[0, 2].sum() == 0 and null[0, 3].sum() == 0 and null[1, 3].sum() == 0  # EOS rows, padding


def test_align_head_rows_sum_to_one_and_padding_is_zero():
    torch.manual_seed(0)
    head = AlignHead(emb_dim=8, dim=16)
    memory, states, emb = torch.randn(2, 5, 16), torch.randn(2, 4, 16), torch.randn(2, 4, 8)
    src_mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    tgt_mask = torch.tensor([[True] * 4, [True] * 2 + [False] * 2])
    w = head(memory, src_mask, states, emb, tgt_mask)
    assert w.shape == (2, 4, 5)
    assert torch.allclose(w.sum(-1), torch.ones(2, 4))
    assert (w[1, :, 3:] == 0).all()


def shuffle_task(n: int, seed: int):
    """Distinct symbols and a random permutation of them: which word comes next is unpredictable, so
    the translation attention (which must guess it) cannot align; a head that reads the word can."""
    r = random.Random(seed)
    pairs, links = [], []
    for _ in range(n):
        s = r.sample(range(30), r.randint(3, 7))
        order = list(range(len(s)))
        r.shuffle(order)
        pairs.append(([f"w{x}" for x in s], [f"v{s[i]}" for i in order]))
        links.append(sorted((i, j) for j, i in enumerate(order)))
    return pairs, links


def _aer(lm, pairs, gold, spec):
    hyps = [Alignment.from_links([(int(i), j) for j, i in enumerate(m.argmax(1))])
            for m, _ in corpus_attention(lm, pairs, spec)]
    return sum(corpus_counts(hyps, gold), Counts()).aer


def shuffle_aers(model_dir, guided: bool, **options) -> tuple[float, float]:
    """Train a small RNN with a head on the shuffle task (guided by its true links, or not); the dev AER
    of the head and of the translation attention."""
    torch.set_num_threads(2)
    pairs, links = shuffle_task(1500, 1)
    dev_pairs, dev_links = shuffle_task(50, 2)
    gold = [Alignment.from_links(lk) for lk in dev_links]
    opts = TrainOptions.of(**RNN_TINY, epochs=4, batch_tokens=400, lr=3e-3, warmup=20,
                           label_smoothing=0.0, guide="file" if guided else None, **options)
    train(pairs, model_dir, opts, dev=DevSet(dev_pairs, gold), guide=links if guided else None)
    lm = load_model(model_dir, "forward")
    return _aer(lm, dev_pairs, gold, AttentionSpec()), _aer(lm, dev_pairs, gold, AttentionSpec(layer=0))


def test_known_answer_the_head_aligns_what_attention_cannot(tmp_path):
    head, attention = shuffle_aers(tmp_path / "m", guided=True)
    assert head < 0.05  # default: the head
    assert attention > 0.3  # the translation attention


def test_a_head_without_translation_learns_the_known_answer_from_the_guide_alone(tmp_path):
    """--no-translation: no output layer and no translation loss; the head learns the shuffle task from
    its guide as it does beside translation, the checkpoint kept by the dev AER (there is no dev loss)."""
    head, _ = shuffle_aers(tmp_path / "m", guided=True, translation=False)
    assert head < 0.05
    lm = load_model(tmp_path / "m", "forward")
    assert lm.model.out is None and not any(k.startswith("out.") for k in lm.model.state_dict())
    log = (tmp_path / "m" / "log.csv").read_text().splitlines()
    assert all(row.split(",")[4] == "" for row in log[1:])  # dev_loss: none without translation
    with pytest.raises(AttnAlignError, match="--no-translation"):
        TrainOptions.of(translation=False).check()
    with pytest.raises(AttnAlignError, match="--no-translation"):
        TrainOptions.of(model_type="transformer", translation=False).check()


def test_the_head_alone_learns_the_known_answer_without_a_decoder(tmp_path):
    """--head-only: no decoder, no translation attention, no bridge; the head's query reads the target's
    own context, and it learns the shuffle task from its guide; every readout reads the head."""
    head, other = shuffle_aers(tmp_path / "m", guided=True, translation=False, head_only=True)
    assert head < 0.05 and other == head  # --layer 0 has no other attention to read: the head
    lm = load_model(tmp_path / "m", "forward")
    keys = lm.model.state_dict()
    assert not any(k.split(".")[0] in ("decoder", "attn", "combine", "bridge", "out") for k in keys)
    assert lm.model.align_head.query.in_features == 2 * RNN_TINY["hidden"]  # its context, no states
    b = make_batch([0], [[4, 5]], [[6, 7]])
    with pytest.raises(AttnAlignError, match="no decoder"):  # a library call that asks for the decoder
        lm.model.attention(b.src, b.src_mask, b.tgt_in)
    # --layer 0 reads the head, says so, and is decoded as a head (Aligner.head chooses the decoding)
    with pytest.warns(AttnAlignWarning, match="--layer 0: this model has no decoder"):
        layer0 = Aligner(tmp_path / "m", AlignOptions(layer=0))
    assert layer0.head and layer0.description["layer"] == "align"
    with pytest.raises(AttnAlignError, match="--head-only leaves out the decoder"):
        TrainOptions.of(align_head=True, head_only=True).check()


@pytest.fixture(scope="module")
def head_model(tmp_path_factory):
    from attnalign.data.corpus import read_corpus

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:200]
    d = tmp_path_factory.mktemp("head") / "m"
    opts = TrainOptions.of(model_type="transformer", direction="both", epochs=1, batch_tokens=500,
                           guide="auto", d_model=16, heads=2, ff_dim=32, enc_layers=1, dec_layers=2,
                           align_head=True)
    train(pairs, d, opts)
    return d, pairs


def test_transformer_head_round_trip_and_aligner_reads_it(head_model):
    d, pairs = head_model
    assert json.loads((d / "config.json").read_text())["model_config"]["align_head"] is True
    lm = load_model(d, "forward")
    ((m, eos),) = corpus_attention(lm, pairs[:1], AttentionSpec(layer="align"))
    assert m.shape == (len(pairs[0][1]), len(pairs[0][0]))
    assert abs(float(m.sum(1)[0] + eos[0]) - 1) < 1e-5
    ((m2, _),) = corpus_attention(lm, pairs[:1])  # the default reads the head too
    assert (m == m2).all()
    auto = Aligner(d).decoding  # the "auto" choices for a bidirectional model with a head
    assert (auto.sym, auto.decoder, auto.threshold) == ("soft", "argmax", 0.5)
    aligner = Aligner(d, AlignOptions(sym="soft", decoder="argmax"))
    assert aligner.description["layer"] == "align" and aligner.description["head"] is None
    assert aligner.align_pairs(pairs[:3])[0].links
    assert Aligner(d, AlignOptions(layer=0)).description["layer"] == 0  # a decoder layer still works


def test_head_needs_a_guide(tmp_path):
    pairs = [(["a", "b"], ["x", "y"])] * 5
    with pytest.raises(AttnAlignError, match="guide"):
        train(pairs, tmp_path / "m", TrainOptions.of(align_head=True, epochs=1))
    r = CliRunner().invoke(app, ["train", "--src", str(SAMPLE / "dev.en"), "--tgt", str(SAMPLE / "dev.fr"),
                                 "--model", str(tmp_path / "c"), "--align-head", "--quiet"])
    assert r.exit_code == 2 and "--guide auto" in r.output


def test_layer_align_without_a_head_is_a_clear_error(models):
    r = CliRunner().invoke(app, ["align", "corpus", "--model", str(models / "rnn"), "--layer", "align",
                                 "--src", str(SAMPLE / "test.en"), "--tgt", str(SAMPLE / "test.fr")])
    assert r.exit_code == 2 and "no alignment head" in r.output and "--align-head" in r.output


BOTH = ["forward", "reverse"]


@pytest.mark.parametrize(
    ("options", "directions", "head", "expected"),
    [
        (AlignOptions(), BOTH, True, ("soft", "argmax", 0.5)),
        (AlignOptions(sym="soft"), BOTH, True, ("soft", "argmax", 0.5)),
        (AlignOptions(decoder="threshold"), BOTH, True, ("soft", "threshold", 0.5)),
        (AlignOptions(sym="grow-diag-final-and"), BOTH, True, ("grow-diag-final-and", "argmax", 0.5)),
        (AlignOptions(), BOTH, False, ("grow-diag-final-and", "argmax", 0.5)),
        (AlignOptions(), ["forward"], True, ("none", "argmax", 0.5)),
        (AlignOptions(sym="intersection"), BOTH, True, ("intersection", "argmax", 0.5)),
        (AlignOptions(decoder="threshold"), BOTH, False, ("grow-diag-final-and", "threshold", 0.5)),
        (AlignOptions(layer=0), BOTH, True, ("grow-diag-final-and", "argmax", 0.5)),
        (AlignOptions(threshold=0.7), BOTH, True, ("soft", "argmax", 0.7)),
        (AlignOptions(decoder="threshold", threshold=0.4), BOTH, True, ("soft", "threshold", 0.4)),
    ],
)
def test_auto_decoding_per_model(options, directions, head, expected):
    both = directions == ["forward", "reverse"]
    o = choose_decoding(options.decoding, both=both, head=head and options.layer in (None, "align"))
    assert (o.sym, o.decoder, o.threshold) == expected


def test_preset_options_given_options_win():
    from attnalign.training import preset_options

    o = preset_options("align", epochs=2, hidden=8)
    assert (o.network.direction, o.teacher.guide, o.schedule.epochs, o.data.subword) == \
        ("both", "auto", 2, 4000)
    assert preset_options("align", subword=0).data.subword == 0  # 0: the student reads whole words
    assert o.network.config == {"align_head": True, "dropout": 0.0, "hidden": 8, "emb_dim": 96,
                                "translation": False, "input_feeding": False, "head_only": True}
    # the typed --hidden wins there too
    assert o.network.gpu == {"emb_dim": 256, "translation": True, "head_only": False}
    assert preset_options("align", direction="forward", guide=None).network.direction == "forward"
    assert preset_options(None) == TrainOptions()
    with pytest.raises(AttnAlignError, match="unknown preset"):
        preset_options("fast")


def test_a_presets_head_only_yields_to_translation_given_over_it(tmp_path):
    """--preset align's CPU student has no decoder (head_only); --translation, typed or in a file, asks
    for one: the preset's choice yields, where --head-only given with it is refused."""
    from attnalign.training import preset_options

    file = write(tmp_path / "t.toml", "[network]\ntranslation = true\n")
    for options in (preset_options("align", translation=True), preset_options("align", config=file)):
        typed = options.network.check()
        assert (typed.translation, typed.head_only, typed.align_head) == (True, False, True)
    assert preset_options("align", translation=False).network.check().head_only is True
    assert preset_options("align", head_only=False).network.check().head_only is False
    with pytest.raises(AttnAlignError, match="--head-only leaves out the decoder"):
        preset_options("align", translation=True, head_only=True).network.check()
    # another network type takes none of it
    assert "head_only" not in preset_options("align", model_type="transformer").network.config


def test_the_benchmarked_configuration_is_the_preset():
    # bench/quality.py and bench/frontier.py train the presets themselves ("align", "align-fast"); the
    # README's tables before the CPU student moved report agree-fert-head-sp-e5-b2k-d0 and -e3-
    import importlib.util

    from helpers import ROOT

    spec = importlib.util.spec_from_file_location("quality", ROOT / "bench" / "quality.py")
    quality = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quality)
    from dataclasses import replace

    from attnalign.training import preset_options

    align, fast = preset_options("align"), preset_options("align-fast")
    assert quality.CONFIGS["align"] == align and quality.CONFIGS["align-fast"] == fast
    # --epochs auto gives the three corpora 5 and 3 passes
    assert all(align.passes(n) == 5 and fast.passes(n) == 3 for n in (10_484, 14_746, 5_601))
    assert align.network.typed().dropout == fast.network.typed().dropout == 0
    # on a CPU the frontier's student; on a GPU the network measured there, as before
    cpu, gpu = align.for_device("cpu", 10**6), align.for_device("cuda", 10**6, memory=80 * 2**30)
    typed = cpu.network.typed()
    assert (typed.hidden, typed.emb_dim, typed.translation, typed.input_feeding, typed.head_only,
            cpu.schedule.lr) == (96, 96, False, False, True, 8e-3)
    old = quality.CONFIGS["agree-fert-head-sp-e5-b2k-d0"]
    wide = {"hidden": 256, "emb_dim": 256, "translation": True, "head_only": False}
    assert old.network.typed() == replace(typed, **wide, input_feeding=True)
    assert gpu.network.typed() == replace(old.network.typed(), input_feeding=False)
    assert old.for_device("cpu", 10**6).schedule == replace(cpu.schedule, lr=2e-3)
    assert quality.CONFIGS["agree-fert-head-sp-e3-b2k-d0"].network == old.network
    # the configuration the preset was before that (8 epochs of 1,000-token batches, dropout 0.2)
    before = quality.CONFIGS["agree-fert-head-sp"]
    s = before.schedule
    assert (s.epochs, s.batch_tokens, s.lr, before.network.typed().dropout) == (8, 1000, None, 0.2)
    assert before.network.typed() == replace(old.network.typed(), dropout=0.2)
    assert s == replace(old.schedule, epochs=8, auto_epochs=8, batch_tokens=1000, lr=None, gpu={})
    assert (before.data, before.teacher, before.runtime) == (align.data, old.teacher, align.runtime)
    # the preset's teacher pools three sampler chains; the configurations before it, one
    assert (align.teacher.aligner.samplers, old.teacher.aligner.samplers) == (3, 1)
    assert old.teacher == replace(align.teacher, aligner=replace(align.teacher.aligner, samplers=1))


def test_cli_preset_reaches_the_model(tmp_path):
    src = tmp_path / "s.txt"
    tgt = tmp_path / "t.txt"
    src.write_text("a b c\nb c\na c\n" * 15)
    tgt.write_text("x y z\ny z\nx z\n" * 15)
    base = ["train", "--src", str(src), "--tgt", str(tgt), "--hidden", "8", "--emb-dim", "8", "--epochs", "1",
            "--quiet", "--preset", "align"]
    r = CliRunner().invoke(app, [*base, "--model", str(tmp_path / "m")])
    assert r.exit_code == 0, r.output
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["directions"] == ["forward", "reverse"] and cfg["model_config"]["align_head"] is True
    assert cfg["train_options"]["guide"] == "auto"
    assert cfg["train_options"]["teacher"]["model"] == "hmm-agree+fertility"
    assert cfg["train_options"]["subword"] == 4000 and load_model(tmp_path / "m").src_seg.is_subword
    loud = [a for a in base if a != "--quiet"]  # the guide stage is announced on stderr
    r = CliRunner().invoke(app, [*loud, "--model", str(tmp_path / "f"), "--direction", "forward"])
    assert r.exit_code == 0
    assert "guide: aligning 45 pairs with hmm-agree+fertility" in r.stderr and "links in" in r.stderr
    assert json.loads((tmp_path / "f" / "config.json").read_text())["directions"] == ["forward"]
    r = CliRunner().invoke(app, [*base[:-1], "nope", "--model", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown preset" in r.output
    # each preset's own batches, learning rate, dropout and passes, each overridden by the option given
    cases = (("align-fast", [], 2000, 8e-3, 0.0, 3),
             ("align-fast", ["--batch-tokens", "12", "--lr", "0.01", "--dropout", "0.3"], 12, 0.01, 0.3, 3),
             ("align-fast", ["--epochs", "auto", "--direction", "forward"], 2000, 8e-3, 0.0, 3),
             ("align", ["--direction", "forward"], 2000, 8e-3, 0.0, 5))
    for k, (preset, extra, batch, lr, dropout, passes) in enumerate(cases):
        args = [a for a in base if a not in ("--epochs", "1")][:-1] + [preset, *extra]
        m = tmp_path / f"p{k}"
        r = CliRunner().invoke(app, [*args, "--model", str(m)])
        assert r.exit_code == 0, r.output
        o = json.loads((m / "config.json").read_text())["train_options"]
        assert (o["batch_tokens"], o["lr"], o["auto_epochs"], o["epochs"]) == (batch, lr, passes, "auto")
        assert o["guide"] == "auto" and o["subword"] == 4000 and o["model_config"]["align_head"] is True
        assert o["model_config"]["dropout"] == dropout
        log = (m / "log.csv").read_text().splitlines()[1:]
        assert max(int(row.split(",")[1]) for row in log) == passes  # auto on 45 pairs: all its passes
