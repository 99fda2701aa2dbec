"""Training: known-answer alignment tasks, checkpoints, resume, errors, the CLI."""

from __future__ import annotations

import json
import random

import pytest
import torch
from helpers import SAMPLE, Kill, before_teacher_options, tiny, write
from typer.testing import CliRunner

import attnalign.training.run as train_mod
from attnalign.cli import app
from attnalign.data.alignments import Alignment
from attnalign.errors import AttnAlignError, OptionError
from attnalign.nmt.batching import make_batch
from attnalign.nmt.checkpoint import load_checkpoint, load_model
from attnalign.training import DevSet, TrainOptions, train
from attnalign.training.model_dir import write_config
from attnalign.training.options import epochs_for, parse_epochs

RNN_TINY = {"hidden": 64, "emb_dim": 32, "dropout": 0.0}
TF_TINY = {"d_model": 64, "heads": 2, "ff_dim": 128, "enc_layers": 2, "dec_layers": 2, "dropout": 0.0}


def symbol_task(n: int, seed: int, reverse: bool):
    """Random symbol strings and their copy (gold: diagonal) or reversal (gold: anti-diagonal)."""
    r = random.Random(seed)
    pairs, gold = [], []
    for _ in range(n):
        s = [f"w{r.randint(0, 19)}" for _ in range(r.randint(3, 8))]
        pairs.append((s, s[::-1] if reverse else list(s)))
        gold.append(Alignment.from_links([(len(s) - 1 - j if reverse else j, j) for j in range(len(s))]))
    return pairs, gold


@pytest.mark.parametrize(
    ("model_type", "config", "reverse", "epochs"),
    [("rnn", RNN_TINY, False, 8), ("rnn", RNN_TINY, True, 8), ("transformer", TF_TINY, False, 10)],
    ids=["rnn-copy", "rnn-reversal", "transformer-copy"],
)
def test_known_answer_alignment(tmp_path, model_type, config, reverse, epochs):
    torch.set_num_threads(2)
    pairs, _ = symbol_task(2000, 1, reverse)
    dev_pairs, gold = symbol_task(50, 2, reverse)
    opts = TrainOptions.of(model_type=model_type, **config, epochs=epochs, batch_tokens=400,
                           lr=3e-3 if model_type == "rnn" else 1e-3, warmup=20, label_smoothing=0.0)
    res = train(pairs, tmp_path / "m", opts, dev=DevSet(dev_pairs, gold))
    assert res["directions"]["forward"]["dev_aer"] < 0.05



@pytest.fixture(scope="module")
def sample_pairs():
    from attnalign.data.corpus import read_corpus

    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]


def test_save_load_round_trip_gives_identical_outputs(tmp_path, sample_pairs):
    train(sample_pairs, tmp_path / "m", tiny(direction="both"))
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["directions"] == ["forward", "reverse"] and cfg["model_type"] == "rnn"
    for direction in ("forward", "reverse"):
        lm = load_model(tmp_path / "m", direction)
        ck = load_checkpoint(tmp_path / "m" / f"{direction}.pt")
        fresh = type(lm.model)(type(lm.model.cfg)(**ck["config"]), len(lm.src_vocab), len(lm.tgt_vocab))
        fresh.load_state_dict(ck["state_dict"])
        fresh.eval()
        s, t = sample_pairs[0] if direction == "forward" else sample_pairs[0][::-1]
        b = make_batch([0], [lm.src_vocab.encode(s)], [lm.tgt_vocab.encode(t)])
        a1 = lm.model(b.src, b.src_mask, b.tgt_in)
        a2 = fresh(b.src, b.src_mask, b.tgt_in)
        assert torch.equal(a1[0], a2[0]) and torch.equal(a1[1], a2[1])
    assert load_model(tmp_path / "m", "reverse").src_vocab.stoi.get("le") is not None  # French side


def test_epochs_auto_and_fractional_epochs(tmp_path, sample_pairs):
    """--epochs auto: 8 passes up to 40,000 pairs, 8 x sqrt(40,000 / pairs) beyond; a fraction of an
    epoch stops that far into the last one (the learning rate decays over the steps actually run)."""
    assert epochs_for("auto", 300) == epochs_for("auto", 40_000) == 8
    assert epochs_for("auto", 160_000) == 4 and epochs_for("auto", 640_000) == 2
    assert epochs_for(1.5, 10**6) == 1.5 and TrainOptions().schedule.epochs == "auto"
    assert epochs_for("auto", 5_000, 3) == 3 and epochs_for("auto", 160_000, 3) == 1.5  # align-fast's rule
    assert TrainOptions.of(auto_epochs=3).passes(640_000) == 0.75
    assert TrainOptions.of(epochs=2, auto_epochs=3).passes(9) == 2
    with pytest.raises(OptionError, match="auto_epochs"):
        TrainOptions.of(auto_epochs=0).check()
    assert parse_epochs("auto") == "auto" and parse_epochs("0.5") == 0.5
    assert parse_epochs("3") == 3 and isinstance(parse_epochs("3"), int)
    with pytest.raises(OptionError, match="--epochs"):
        parse_epochs("many")
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(OptionError, match="--epochs"):
            TrainOptions.of(epochs=bad).check()
    pairs = sample_pairs[:60]
    one = train(pairs, tmp_path / "one", tiny(epochs=1))["directions"]["forward"]["steps"]
    part = train(pairs, tmp_path / "part", tiny(epochs=2.5))["directions"]["forward"]["steps"]
    auto = train(pairs, tmp_path / "auto", tiny(epochs="auto"))["directions"]["forward"]["steps"]
    assert one > 1 and part == round(2.5 * one) and auto == 8 * one
    log = (tmp_path / "part" / "log.csv").read_text().splitlines()[1:]
    assert [row.split(",")[1:3] for row in log] == [["1", str(one)], ["2", str(2 * one)], ["3", str(part)]]

    class Notes:  # a reporter that keeps the notes
        def __init__(self): self.notes = []
        def start(self, *a): pass
        def step(self, *a): pass
        def validation(self, row): pass
        def end(self): pass
        def note(self, message): self.notes.append(message)

    big = [([f"a{k % 50}"], [f"b{k % 50}"]) for k in range(80_000)]
    r = Notes()
    res = train(big, tmp_path / "big", tiny(epochs="auto", max_steps=2, batch_tokens=4000),
                reporter=r)
    assert r.notes == ["--epochs auto: 5.66 passes over 80,000 pairs"]
    assert res["directions"]["forward"]["steps"] == 2


def test_same_seed_same_model(tmp_path, sample_pairs):
    train(sample_pairs, tmp_path / "a", tiny(epochs=1))
    train(sample_pairs, tmp_path / "b", tiny(epochs=1))
    a = load_checkpoint(tmp_path / "a" / "forward.pt")["state_dict"]
    b = load_checkpoint(tmp_path / "b" / "forward.pt")["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)


class KillAt:
    def __init__(self, step):
        self.at = step

    def start(self, *a): pass
    def validation(self, row): pass
    def end(self): pass

    def step(self, step, loss, tps):
        if step >= self.at:
            raise Kill


def test_resume_equals_an_uninterrupted_run(tmp_path, sample_pairs, monkeypatch):
    opts = tiny(epochs=3, save_every=2)
    dev = DevSet(sample_pairs[:20])
    train(sample_pairs, tmp_path / "full", opts, dev=dev)
    # Report every step, so the kill comes at an exact step (after the step-4 checkpoint at step 5).
    monkeypatch.setattr(train_mod.time, "perf_counter", iter(range(0, 10**6, 2)).__next__)
    with pytest.raises(Kill):
        train(sample_pairs, tmp_path / "killed", opts, dev=dev, reporter=KillAt(11))
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "killed" / "forward.last.pt")["step"] == 10
    train(sample_pairs, tmp_path / "killed", TrainOptions(), dev=dev, resume=True)
    for name in ("forward.pt", "forward.last.pt"):
        a = load_checkpoint(tmp_path / "full" / name)
        b = load_checkpoint(tmp_path / "killed" / name)
        assert a["step"] == b["step"]
        assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"]), name


def test_resume_of_a_run_older_than_the_teacher_options_keeps_its_teacher(tmp_path, monkeypatch):
    # a run started before --guide-prefix and --guide-identical existed: its teacher saw whole words and
    # had no identical-word prior, and its resume must rebuild that same teacher
    import attnalign.statistical as statistical

    model_dir = tmp_path / "m"
    model_dir.mkdir()
    write_config(model_dir, tiny(guide="auto"), ["forward"], {})
    config = json.loads((model_dir / "config.json").read_text())
    before_teacher_options(config["train_options"])
    (model_dir / "config.json").write_text(json.dumps(config))
    seen = {}

    def teacher(pairs, *args, **kw):  # the fitted teacher gives the guide's links and the kept matrices
        seen.update(kw)
        raise Kill

    monkeypatch.setattr(statistical, "SoftTeacher", teacher)
    with pytest.raises(Kill):
        train([(["a"], ["b"])], model_dir, TrainOptions(), resume=True)
    assert seen["prefix"] == 0 and seen["identical"] == 0


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, sample_pairs, monkeypatch):
    probe = train(sample_pairs, tmp_path / "probe", tiny(epochs=1))
    per_epoch = probe["directions"]["forward"]["steps"]
    real = train_mod.token_loss
    calls = iter(range(10**6))

    def poisoned(logits, target, smoothing):  # NaN from the 4th update of the second epoch on
        loss = real(logits, target, smoothing)
        return loss * float("nan") if next(calls) >= per_epoch + 3 else loss

    monkeypatch.setattr(train_mod, "token_loss", poisoned)
    with pytest.raises(AttnAlignError, match=f"loss became nan at step {per_epoch + 4}"):
        train(sample_pairs, tmp_path / "m", tiny(epochs=2, save_every=2))
    # the best checkpoint (end of epoch 1) and the last resumable state are intact and loadable
    assert load_checkpoint(tmp_path / "m" / "forward.pt")["step"] == per_epoch
    assert load_model(tmp_path / "m").model is not None
    assert per_epoch <= load_checkpoint(tmp_path / "m" / "forward.last.pt")["step"] < per_epoch + 4


def test_refuses_an_existing_model_without_overwrite(tmp_path, sample_pairs):
    train(sample_pairs[:50], tmp_path / "m", tiny(epochs=1))
    with pytest.raises(AttnAlignError, match="already holds a model") as e:
        train(sample_pairs[:50], tmp_path / "m", tiny(epochs=1))
    assert "--overwrite" in e.value.hint
    (tmp_path / "other").mkdir()
    write(tmp_path / "other" / "notes.txt", "mine")
    with pytest.raises(AttnAlignError, match="replaces only an attnalign model directory"):
        train(sample_pairs[:50], tmp_path / "other", tiny(epochs=1), overwrite=True)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_corrupt_and_foreign_checkpoints(tmp_path, sample_pairs):
    train(sample_pairs[:50], tmp_path / "m", tiny(epochs=1))
    (tmp_path / "m" / "forward.pt").write_bytes(b"garbage")
    with pytest.raises(AttnAlignError, match="cannot read the checkpoint"):
        load_model(tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["format_version"] = 99
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(AttnAlignError, match="format 99"):
        load_model(tmp_path / "m")
    with pytest.raises(AttnAlignError, match="not an attnalign model directory"):
        load_model(tmp_path)
    with pytest.raises(AttnAlignError, match="no reverse direction"):
        cfg["format_version"] = 1
        (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
        load_model(tmp_path / "m", "reverse")


def test_empty_training_corpus(tmp_path):
    with pytest.raises(AttnAlignError, match="no pair with both sides"):
        train([([], ["a"]), (["b"], [])], tmp_path / "m", tiny())


def test_a_guide_file_in_the_options_asks_the_api_for_its_links(tmp_path, sample_pairs):
    # train() takes links; a path in the options alone would leave a head without a guide (it crashed)
    options = tiny(align_head=True, translation=False, guide=str(tmp_path / "g.align"))
    with pytest.raises(OptionError, match="guide="):
        train(sample_pairs, tmp_path / "m", options)
    assert not (tmp_path / "m").exists()


def test_cli_train(tmp_path):
    runner = CliRunner()
    src = write(tmp_path / "t.en", "".join(f"a{i % 7} b{i % 5} c\n" for i in range(60)))
    tgt = write(tmp_path / "t.fr", "".join(f"x{i % 5} y{i % 7} z\n" for i in range(60)))
    gold = write(tmp_path / "g", "0-1 1-0 2-2\n" * 10)
    dev_src = write(tmp_path / "d.en", "a1 b1 c\n" * 10)
    dev_tgt = write(tmp_path / "d.fr", "x1 y1 z\n" * 10)
    args = ["train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
            "--emb-dim", "8", "--epochs", "2", "--dev-src", dev_src, "--dev-tgt", dev_tgt,
            "--dev-gold", gold, "--quiet"]
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.stderr
    assert "dev AER" in r.stdout and "forward" in r.stdout
    log = (tmp_path / "m" / "log.csv").read_text().splitlines()
    assert log[0].startswith("direction,epoch,step") and len(log) == 3
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 1 and "already holds a model" in r.stderr and "Traceback" not in r.stderr
    r = runner.invoke(app, ["train", "--src", str(src), "--tgt", str(tgt), "--model", str(tmp_path / "x"),
                            "--heads", "4"])
    assert r.exit_code == 2 and "--heads does not apply to --model-type rnn" in r.stderr


def test_subword_model_aligns_words(tmp_path, sample_pairs):
    from attnalign.nmt.extract import corpus_attention

    train(sample_pairs, tmp_path / "m", tiny(epochs=1, subword=120))
    lm = load_model(tmp_path / "m")
    assert lm.src_seg.is_subword and lm.tgt_seg.is_subword
    words = [(["the", "unseenword", "cat"], ["le", "chat", "inconnu", "."])]
    tokens, index = lm.src_seg.segment(words[0][0])
    assert len(tokens) > 3 and index[0] == 0 and index[-1] == 2 and sorted(index) == index
    (m, eos), = corpus_attention(lm, words)
    assert m.shape == (4, 3)  # target words x source words, whatever the pieces
    assert abs((m.sum(1) + eos) - 1).max() < 1e-5


def test_cli_train_subword_and_guide_options_reach_the_model(tmp_path):
    runner = CliRunner()
    src = write(tmp_path / "t.en", "".join(f"a{i % 7} b{i % 5} c\n" for i in range(40)))
    tgt = write(tmp_path / "t.fr", "".join(f"x{i % 5} y{i % 7} z\n" for i in range(40)))
    guide = write(tmp_path / "g.align", "0-1 1-0 2-2\n" * 40)
    args = ["train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
            "--emb-dim", "8", "--epochs", "1", "--quiet", "--subword", "30", "--guide", guide,
            "--guide-weight", "0.5"]
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.stderr
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["train_options"]["subword"] == 30 and cfg["train_options"]["guide_weight"] == 0.5
    assert load_model(tmp_path / "m").src_seg.is_subword
    bad = write(tmp_path / "bad.align", "0-1 1-0 9-9\n" * 40)
    r = runner.invoke(app, [str(a) for a in args[:-4]] + ["--guide", str(bad), "--overwrite"])
    assert r.exit_code == 1 and "out of range" in r.stderr
    r = runner.invoke(app, [str(a) for a in args] + ["--overwrite", "--subword", "-1"])
    assert r.exit_code == 2 and "bad --subword -1" in r.stderr
    # 0 turns the preset's pieces off: the student reads whole words
    words = [str(a) for a in args[:-6]] + ["--preset", "align", "--subword", "0", "--overwrite"]
    r = runner.invoke(app, words)
    assert r.exit_code == 0, r.stderr
    assert not load_model(tmp_path / "m").src_seg.is_subword


def test_out_of_memory_names_the_option_to_lower(tmp_path, sample_pairs, monkeypatch):
    from attnalign.nmt.models.rnn import RNNModel

    def oom(self, *a, **kw):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(RNNModel, "forward", oom)
    with pytest.raises(AttnAlignError, match="out of memory") as e:
        train(sample_pairs[:50], tmp_path / "m", tiny(epochs=1))
    assert "--batch-tokens" in e.value.hint


def test_max_length_leaves_long_pairs_out_with_a_warning(tmp_path, sample_pairs):
    long_pair = (["w"] * 400, ["v"] * 3)
    pairs = [*sample_pairs[:200], long_pair, (["a"] * 30, ["b"] * 30)]
    with pytest.warns(UserWarning, match=r"1 of 202 training pairs are longer than --max-length 250"):
        train(pairs, tmp_path / "m", tiny(direction="both"))
    with pytest.warns(UserWarning, match=r"2 of 202 .* --max-length 20 "):
        train(pairs, tmp_path / "m2", tiny(max_length=20))
    with pytest.raises(AttnAlignError, match="--max-length"):
        train(pairs, tmp_path / "m3", tiny(max_length=0))


def test_smoothed_nll_known_values_and_cross_entropy():
    """Hand-computed: logits [0, ln 3, 0] give p = [.2, .6, .2]; target 1 with smoothing 0.1 costs
    0.9 * -ln .6 + 0.1 * -(ln .2 + ln .6 + ln .2) / 3 = 0.459743 + 0.124323 = 0.584066, and its
    gradient is p - 0.9 onehot - 0.1 / 3; a row whose target is the ignore index costs nothing and gets
    no gradient. Random rows: F.cross_entropy's value and gradient."""
    from attnalign.training.loss import smoothed_nll

    logits = torch.tensor([[0.0, float(torch.log(torch.tensor(3.0))), 0.0], [5.0, 1.0, 2.0]],
                          requires_grad=True)
    loss = smoothed_nll(logits, torch.tensor([1, 0]), 0.1, 0)
    assert loss.item() == pytest.approx(0.584066, abs=1e-6)
    loss.backward()
    assert torch.allclose(logits.grad, torch.tensor([[1 / 6, -1 / 3, 1 / 6], [0.0, 0.0, 0.0]]), atol=1e-6)
    torch.manual_seed(0)
    for smoothing in (0.0, 0.1, 0.3):
        x = torch.randn(4, 7, 50, requires_grad=True)
        y = torch.randint(0, 50, (4, 7))
        y[0, :3] = 0
        mine = smoothed_nll(x, y, smoothing, 0)
        (g_mine,) = torch.autograd.grad(mine * 0.37, x)
        ref = torch.nn.functional.cross_entropy(x.reshape(-1, 50), y.reshape(-1), ignore_index=0,
                                                label_smoothing=smoothing, reduction="sum")
        (g_ref,) = torch.autograd.grad(ref * 0.37, x)
        assert mine.item() == pytest.approx(ref.item(), rel=1e-6)
        assert torch.allclose(g_mine, g_ref, atol=1e-6)
