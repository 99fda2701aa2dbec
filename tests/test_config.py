"""A run's configuration is data: sections with their defaults, presets as files, ``train --config``,
and a model directory's ``train.toml`` that trains the same model again."""

from __future__ import annotations

from dataclasses import asdict

import pytest
import torch
from helpers import SAMPLE, Kill, invoke, one_error, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnalign.errors import OptionError
from attnalign.nmt.checkpoint import load_checkpoint
from attnalign.training.config_file import PRESET_DIR, PRESETS, config_text, preset_options, read_config
from attnalign.training.options import GPU_TABLES, SECTIONS, TrainOptions

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


@pytest.fixture
def seen(monkeypatch):
    """The TrainOptions each ``train`` command line makes (nothing is trained)."""
    import attnalign.workflows.train_files as tf

    runs = []

    def record(model, options, **kw):
        runs.append(options)
        raise Kill

    monkeypatch.setattr(tf, "train_files", record)
    return runs


def test_typed_options_win_over_the_file_which_wins_over_its_preset(tmp_path, seen):
    config = tmp_path / "run.toml"
    config.write_text('preset = "align"\n[schedule]\nwarmup = 7\nepochs = 2\n[network]\nhidden = 24\n'
                      "input_feeding = true\n")
    base = ["train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
            "--config", config]
    invoke(*base)
    invoke(*base, "--warmup", "9", "--epochs", "1.5", "--hidden", "32", "--layers", "2", "--preset",
           "align-fast")
    file, typed = seen
    assert (file.schedule.warmup, file.schedule.epochs, file.schedule.auto_epochs) == (7, 2, 5)
    # the preset's
    assert (file.network.direction, file.data.subword, file.teacher.guide) == ("both", 4000, "auto")
    # the file's input_feeding wins over the preset's [network.gpu] entry for it
    assert file.network.config == {"align_head": True, "dropout": 0.0, "hidden": 24, "emb_dim": 96,
                                   "translation": False, "input_feeding": True, "head_only": True}
    # the file's hidden wins there too
    assert file.network.gpu == {"emb_dim": 256, "translation": True, "head_only": False}
    assert (typed.schedule.warmup, typed.schedule.epochs, typed.schedule.auto_epochs) == (9, 1.5, 3)
    assert typed.network.config["hidden"] == 32 and typed.network.config["enc_layers"] == 2


def test_the_readme_example_is_a_config_file(tmp_path):
    from helpers import ROOT

    text = (ROOT / "README.md").read_text()
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "r.toml").write_text(block)
    o = preset_options(config=tmp_path / "r.toml")
    assert (o.network.config["hidden"], o.schedule.epochs, o.teacher.guide) == (512, 3, "auto")


def test_a_preset_names_only_what_it_changes():
    defaults = TrainOptions().flat()
    for name in PRESETS:
        preset, values = read_config(PRESET_DIR / f"{name}.toml")
        for key, value in values.items():
            assert key in GPU_TABLES or defaults.get(key) != value, (name, key)
    assert preset_options("align-fast") == preset_options("align").updated(auto_epochs=3)


def test_the_options_round_trip_through_the_record_and_the_file(tmp_path):
    cases = [TrainOptions(), preset_options("align"),
             TrainOptions.of(model_type="transformer", d_model=32, heads=2, layers=1, guide="auto",
                             guide_model="hmm-agree", guide_prefix=3, self_train=1, self_train_epochs=1.5,
                             lr=3e-4, max_steps=7, threads=2, save_every=50, subword=0, lowercase=True),
             TrainOptions.of(hidden=16, lr=1e-3, gpu_network={"hidden": 32}, gpu_schedule={"lr": 5e-4,
                                                                                           "auto_epochs": 4})]
    for options in cases:
        assert TrainOptions.from_saved(options.record()) == options
        path = tmp_path / "o.toml"
        path.write_text(config_text(options, comment="a\nb"))
        assert preset_options(config=path) == options
        assert set(tomllib.loads(path.read_text())) == set(SECTIONS)


def test_an_old_config_json_record_keeps_loading():
    # before sections (and before --max-length and the teacher's own record): flat guide_* keys
    old = {"model_type": "rnn", "model_config": {"hidden": 64}, "epochs": 3, "batch_tokens": 2000,
           "direction": "both", "guide": "auto", "guide_model": "hmm-agree", "guide_sym": "posterior",
           "lr": 0.002, "seed": 4}
    o = TrainOptions.from_saved(old)
    assert (o.schedule.epochs, o.schedule.batch_tokens, o.schedule.lr, o.schedule.seed) == (3, 2000, 0.002, 4)
    assert (o.network.direction, o.network.config) == ("both", {"hidden": 64})
    assert o.teacher.aligner.model == "hmm-agree"
    assert (o.data.max_length, o.runtime.parallel_directions, o.teacher.aligner.prefix) == (10**9, "off", 0)


def test_train_toml_trains_the_same_model_again(tmp_path):
    src, tgt = tmp_path / "s.txt", tmp_path / "t.txt"
    src.write_text("a b c\nb c\na c\n" * 15)
    tgt.write_text("x y z\ny z\nx z\n" * 15)
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "8", "--emb-dim",
               "8", "--epochs", "1", "--seed", "5", "--batch-tokens", "auto", "--quiet")
    assert r.exit_code == 0, r.output
    written = (tmp_path / "m" / "train.toml").read_text()
    assert f"--src {src}" in written and "batch_tokens = 2000" in written  # auto, as it ran on the CPU
    assert tomllib.loads(written)["network"]["hidden"] == 8
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "again", "--config",
               tmp_path / "m" / "train.toml", "--quiet")
    assert r.exit_code == 0, r.output
    a, b = (load_checkpoint(tmp_path / d / "forward.pt")["state_dict"] for d in ("m", "again"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    # --resume with the run's own file asks for nothing new; with another value it is refused
    r = invoke("train", "--model", tmp_path / "m", "--resume", "--config", tmp_path / "m" / "train.toml",
               "--quiet")
    assert r.exit_code == 0, r.output
    other = tmp_path / "other.toml"
    other.write_text("[schedule]\nseed = 6\n")
    one_error(invoke("train", "--model", tmp_path / "m", "--resume", "--config", other), 2, "--seed differs")


@pytest.mark.parametrize("text, code, needles", [
    ("[schedule]\nepochs = \n", 1, ("o.toml:2", "not a TOML file")),
    ("[shedule]\nepochs = 2\n", 2, ("o.toml:1", "'shedule' is not a section", "the sections are data")),
    ("[schedule]\nwarmup = 2\nhidden = 8\n", 2, ("o.toml:3", "[schedule] has no option 'hidden'")),
    ("[data]\nlowercase = \"yes\"\n", 2, ("o.toml:2", "lowercase = 'yes' is not true or false")),
    ("[schedule]\nseed = 1.5\n", 2, ("o.toml:2", "seed = 1.5 is not a whole number")),
    ("[schedule]\nwarmup = 3\n[network]\nhidden = -3\n", 2, ("o.toml:4", "--hidden must be >= 1")),
    ("[network]\nhidden = 8\n[network.gpu]\nhidden = 0\n", 2, ("o.toml:4", "--hidden must be >= 1")),
    ("[schedule]\nlr = 1e-3\n[schedule.gpu]\nlr = 0\n", 2, ("o.toml:4", "--lr must be > 0")),
    ("[schedule.gpu]\nhidden = 8\n", 2, ("o.toml:2", "[schedule.gpu] has no option 'hidden'")),
    ("[network]\nlayers = 99\n", 2, ("o.toml:2", "--layers must be")),
    ("[teacher]\nguide = \"auto\"\nguide_model = \"ibm9\"\n", 2, ("o.toml:3", "'ibm9' (--guide-model)")),
    ("a = " + "[" * 5000 + "]" * 5000 + "\n", 1, ("o.toml", "nested too deeply")),
    ("[schedule]\nepochs = 0\n", 2, ("o.toml:2", "--epochs must be > 0")),
    ("[network]\nmodel_type = \"rnn\"\nd_model = 8\n", 2, ("o.toml:3", "--d-model does not apply")),
    ('preset = "fast"\n', 2, ("o.toml:1", "unknown preset 'fast'")),
    (b"[data]\nlowercase = true # \xff\n", 1, ("o.toml", "is not UTF-8")),
])
def test_a_bad_config_file_is_one_error_line(tmp_path, text, code, needles):
    path = tmp_path / "o.toml"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--config", path)
    one_error(r, code, *needles)
    assert not (tmp_path / "m").exists()
    one_error(invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model",
                     tmp_path / "m", "--config", tmp_path / "missing.toml"), 1, "missing.toml",
              "cannot be read")
    one_error(invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model",
                     tmp_path / "m", "--config", "/dev/zero"), 1, "larger than 1024 KiB")


def test_each_section_checks_its_own_values():
    for flat, flag in [({"min_freq": 0}, "--min-freq"), ({"clip": 0}, "--clip"),
                       ({"threads": 0}, "--threads"), ({"guide_weight": -1}, "--guide-weight"),
                       ({"direction": "up"}, "--direction"), ({"window": 5}, "--window sets a local")]:
        with pytest.raises(OptionError, match=flag):
            TrainOptions.of(**flat).check()
    with pytest.raises(OptionError, match="unknown training option hiden"):
        TrainOptions.of(hiden=8)
    assert asdict(TrainOptions.of(layers=3).network.typed())["dec_layers"] == 3


OPTIONS = st.fixed_dictionaries({}, optional={
    "epochs": st.one_of(st.just("auto"), st.integers(1, 50), st.floats(0.1, 20)),
    "batch_tokens": st.one_of(st.just("auto"), st.integers(1, 10**6)),
    "lr": st.floats(1e-6, 0.5), "seed": st.integers(0, 2**32 - 1), "max_steps": st.integers(1, 10**9),
    "subword": st.integers(0, 10**5), "lowercase": st.booleans(), "guide": st.just("auto"),
    "guide_prefix": st.integers(0, 9), "hidden": st.integers(1, 4096), "layers": st.integers(1, 8),
    "dropout": st.floats(0, 0.9), "direction": st.sampled_from(["forward", "reverse", "both"]),
    "init_from": st.text(min_size=1), "src_lang": st.text(), "threads": st.integers(1, 8)})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flat=OPTIONS, comment=st.text())
def test_any_options_and_any_comment_round_trip_through_a_file(tmp_path, flat, comment):
    # user text (a path, a language code, the command in the comment) is TOML text, never TOML syntax
    options = TrainOptions.of(**flat)
    path = tmp_path / "o.toml"
    path.write_text(config_text(options, comment=comment), encoding="utf-8")
    assert preset_options(config=path) == options


def test_a_name_that_is_not_utf8_is_left_out_and_said(tmp_path):
    """TOML holds text: a file name with a byte that is not UTF-8 cannot be written, and its \\xNN form
    would name another file; the comment says it is left out (and shows it in escapes)."""
    options = TrainOptions.of(init_from="m\udcff", guide="g\udcfe")  # bytes 0xff, 0xfe as Python keeps them
    path = tmp_path / "o.toml"
    text = config_text(options, comment="--src a\udcff\x1b[31m")
    path.write_text(text, encoding="utf-8")
    assert "# --src a\\xff?[31m" in text and "Left out: guide, init_from" in text
    read = preset_options(config=path)
    assert read.network.init_from is None and read.teacher.guide is None


def test_the_command_line_preset_wins_over_the_files_and_an_empty_one_is_refused(tmp_path, seen):
    config = tmp_path / "run.toml"
    config.write_text('preset = "align"\n[schedule]\nwarmup = 7\n')
    base = ["train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
            "--config", config]
    r = invoke(*base, "--preset", "align-fast")
    assert "--preset align-fast wins over the preset = 'align'" in r.stderr
    assert seen[0].schedule.auto_epochs == 3 and seen[0].schedule.warmup == 7
    one_error(invoke(*base, "--preset", ""), 2, "unknown preset ''")
    with pytest.raises(OptionError, match="unknown preset ''"):
        preset_options("")


def test_a_config_file_may_come_from_stdin_with_a_byte_order_mark(tmp_path, seen):
    text = b"\xef\xbb\xbf[schedule]\nwarmup = 7\n"
    (tmp_path / "bom.toml").write_bytes(text)
    assert preset_options(config=tmp_path / "bom.toml").schedule.warmup == 7
    invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
           "--config", "-", input=text)
    assert seen[0].schedule.warmup == 7
    one_error(invoke("train", "--src", "-", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
                     "--config", "-", input=text), 2, "both read stdin")


def test_translation_typed_over_the_preset_brings_the_decoder_back(tmp_path, seen):
    base = ("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
            "--preset", "align")
    for extra in (["--translation"], [], ["--translation", "--head-only"]):
        invoke(*base, *extra)
    translating, preset = (options.network.check() for options in seen[:2])
    assert (translating.translation, translating.head_only) == (True, False)
    assert (preset.translation, preset.head_only) == (False, True)
    with pytest.raises(OptionError, match="--head-only leaves out the decoder"):  # both typed
        seen[2].network.check()


def test_guide_none_turns_off_a_presets_guide(tmp_path, seen):
    invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
           "--preset", "align", "--guide", "none", "--no-align-head")
    assert seen[0].teacher.guide is None and seen[0].network.config["align_head"] is False
    assert TrainOptions.of(guide="none").teacher.guide is None


def test_train_toml_says_how_to_train_again_from_anywhere(tmp_path):
    gold = SAMPLE / "dev.gold.pharaoh"
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr",
               "--dev-src", SAMPLE / "dev.en", "--dev-tgt", SAMPLE / "dev.fr", "--dev-gold", gold,
               "--gold-format", "pharaoh", "--gold-zero-based", "--model", tmp_path / "m", "--hidden", "8",
               "--emb-dim", "8", "--max-steps", "1", "--quiet")
    assert r.exit_code == 0, r.output
    head = (tmp_path / "m" / "train.toml").read_text().split("\n\n")[0]
    assert f"--config {tmp_path / 'm' / 'train.toml'} " in head
    assert f"--dev-gold {gold}" in head and "--gold-format pharaoh --gold-zero-based" in head


def test_print_config_is_the_whole_run_and_reads_back_to_the_same_options(tmp_path, seen):
    """--print-config reads no corpus and needs no --model; its file, given back with --config, is the
    same run, and it marks what the preset and the user set."""
    r = invoke("train", "--print-config", "--preset", "align", "--hidden", "300", "--epochs", "2")
    assert r.exit_code == 0 and not seen, r.output
    assert "hidden = 300  # given" in r.stdout and "subword = 4000  # preset align" in r.stdout
    assert "cell = \"gru\"\n" in r.stdout  # a network default is written too
    path = write(tmp_path / "mine.toml", r.stdout)
    invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
           "--preset", "align", "--hidden", "300", "--epochs", "2")
    assert preset_options(config=path) == seen[0].updated(**{k: v for k, v in asdict(
        seen[0].network.typed()).items()})
    one_error(invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr"), 2, "give --model DIR")


def test_a_file_is_checked_for_its_values_not_for_this_machines_memory(tmp_path):
    """A configuration for a larger machine reads (its values are in range); the run refuses it where it
    cannot fit, as a typed option is refused."""
    options = TrainOptions.of(hidden=8192, layers=32)
    path = write(tmp_path / "big.toml", config_text(options))
    assert preset_options(config=path) == options
    with pytest.raises(OptionError, match="the network needs at least"):
        options.check()
