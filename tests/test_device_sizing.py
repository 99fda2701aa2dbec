"""Training sized for the device: ``--batch-tokens auto`` (batches, rate, passes), ``--precision``, and
the batch and guide tensors built as whole arrays (checked against their row-by-row definition)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from helpers import SAMPLE, invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from attnalign.errors import OptionError
from attnalign.nmt.batching import make_batch
from attnalign.nmt.vocab import BOS_ID, EOS_ID, PAD_ID
from attnalign.training.config_file import preset_flags, preset_options
from attnalign.training.guide import guide_targets, link_arrays
from attnalign.training.options import (
    CPU_BATCH_TOKENS,
    EPOCHS_FULL_PAIRS,
    EPOCHS_FULL_PAIRS_GPU,
    GPU_BATCH_TOKENS,
    TrainOptions,
    gpu_batch_tokens,
    parse_batch_tokens,
)

GIB = 2**30


def test_batch_tokens_auto_on_a_cpu_is_todays_preset():
    opts = preset_options("align").for_device("cpu", corpus_tokens=10**7)
    s = opts.schedule
    assert (s.batch_tokens, s.lr, opts.runtime.precision, s.auto_full_pairs) == (2000, 8e-3, "fp32",
                                                                                 EPOCHS_FULL_PAIRS)


def test_batch_tokens_auto_on_a_gpu_by_hand():
    # 80 GiB: the memory share holds 0.25 * 80 GiB / 160 KiB = 131,072 tokens, so the corpus decides
    assert gpu_batch_tokens(230_000, 80 * GIB) == 2000  # 10k pairs: 1,150 a batch, raised to the CPU's
    assert gpu_batch_tokens(2_400_000, 80 * GIB) == 12_000  # 100k pairs: 200 updates a pass
    assert gpu_batch_tokens(8_000_000, 80 * GIB) == GPU_BATCH_TOKENS == 16_000  # 310k pairs: the cap
    assert gpu_batch_tokens(8_000_000, 2 * GIB) == 3276  # a 2 GiB card: 0.25 * 2 GiB / 160 KiB
    opts = preset_options("align").for_device("cuda", 2_400_000, memory=80 * GIB)
    assert opts.schedule.batch_tokens == 12_000
    assert opts.schedule.lr == pytest.approx(2e-3 * math.sqrt(6))  # sqrt(12,000 / 2,000)
    assert opts.schedule.auto_full_pairs == EPOCHS_FULL_PAIRS_GPU and opts.runtime.precision == "fp32"
    assert opts.passes(310_000) == 5.0  # the preset's full passes
    assert preset_options("align").passes(310_000) == pytest.approx(5 * math.sqrt(40_000 / 310_000))


def test_the_preset_on_a_gpu_trains_its_own_network():
    """``--preset align`` trains the frontier's student on a CPU (96 wide, no translation, no input
    feeding, no decoder) and the network measured on a CUDA GPU there (256 wide, translating), each
    option the user gives winning on both; the options that ran (what config.json records) hold the
    network as it was built, nothing left to resolve."""
    gpu = preset_options("align").for_device("cuda", 2_400_000, memory=80 * GIB)
    cpu = preset_options("align").for_device("cpu", 2_400_000)
    g, c = gpu.network.typed(), cpu.network.typed()
    assert (g.hidden, g.emb_dim, g.translation, g.input_feeding, g.head_only) == (
        256, 256, True, False, False)
    assert (c.hidden, c.emb_dim, c.translation, c.input_feeding, c.head_only) == (
        96, 96, False, False, True)
    assert gpu.network.gpu == cpu.network.gpu == gpu.schedule.gpu == cpu.schedule.gpu == {}
    given = preset_options("align", input_feeding=True, hidden=64)
    on_gpu = given.for_device("cuda", 2_400_000, memory=80 * GIB).network.config
    assert (on_gpu["input_feeding"], on_gpu["hidden"], on_gpu["emb_dim"]) == (True, 64, 256)
    transformer = preset_options("align", model_type="transformer")
    assert not {"hidden", "emb_dim", "input_feeding"} & set(transformer.network.config)  # not its options
    assert transformer.for_device("cuda", 10**6, memory=80 * GIB).network.typed().translation is True
    assert preset_flags("align").endswith("; on a CUDA GPU --hidden 256 --emb-dim 256 --translation "
                                          "--no-head-only --lr 0.002")


def test_a_schedule_of_its_own_on_a_gpu():
    """``[schedule.gpu]`` is what a CUDA GPU runs instead (before its batch scales the rate); a CPU keeps
    ``[schedule]``; what ran holds nothing left to resolve; an option typed beside it wins on both."""
    options = TrainOptions.of(lr=8e-3, batch_tokens="auto", gpu_schedule={"lr": 2e-3, "auto_epochs": 4})
    cpu = options.for_device("cpu", 10**7)
    gpu = options.for_device("cuda", 10**7, memory=80 * GIB)
    assert (cpu.schedule.lr, cpu.schedule.auto_epochs) == (8e-3, options.schedule.auto_epochs)
    assert cpu.schedule.gpu == {}
    tokens = gpu.schedule.batch_tokens
    assert gpu.schedule.lr == pytest.approx(2e-3 * math.sqrt(tokens / CPU_BATCH_TOKENS))
    assert (gpu.schedule.auto_epochs, gpu.schedule.gpu) == (4, {})
    from attnalign.training.config_file import layered_options

    typed = layered_options(None, {"lr": 8e-3, "gpu_schedule": {"lr": 2e-3}}, {"lr": 1e-3})
    assert typed.schedule.gpu == {} and typed.schedule.lr == 1e-3


def test_given_batch_tokens_are_kept_on_any_device():
    opts = TrainOptions.of(batch_tokens=3000, lr=1e-3, precision="bf16")
    assert opts.for_device("cuda", 10**7, memory=80 * GIB) == opts


def test_bad_batch_tokens_and_precision_name_the_option():
    with pytest.raises(OptionError, match="--batch-tokens"):
        parse_batch_tokens("lots")
    assert parse_batch_tokens("4000") == 4000 and parse_batch_tokens("auto") == "auto"
    with pytest.raises(OptionError, match="--precision"):
        TrainOptions.of(precision="fp8").check()
    with pytest.raises(OptionError, match="--batch-tokens"):
        TrainOptions.of(batch_tokens=0).check()
    with pytest.raises(OptionError, match="--init-from"):  # fine-tuning is not autocast: refused, not ignored
        TrainOptions.of(precision="bf16", init_from="hf:some/model").check()


def test_train_records_what_auto_resolved_to_and_bf16_trains(tmp_path):
    """On a CPU ``--batch-tokens auto`` is the preset's 2,000 and config.json records the number, so
    ``--resume`` repeats the run; ``--precision bf16`` trains under autocast and is recorded."""
    model = tmp_path / "m"
    r = invoke("train", "--src", SAMPLE / "train.en", "--tgt", SAMPLE / "train.fr", "--preset", "align-fast",
               "--epochs", "1", "--hidden", "16", "--emb-dim", "8", "--subword", "200", "--max-steps", "3",
               "--precision", "bf16", "--device", "cpu", "--model", model, "--quiet")
    assert r.exit_code == 0, r.stderr
    config = json.loads((model / "config.json").read_text())
    saved = config["train_options"]
    assert (saved["batch_tokens"], saved["precision"], saved["lr"]) == (CPU_BATCH_TOKENS, "bf16", 8e-3)
    import sentencepiece

    # the pieces depend on sentencepiece's version: the run records it (and torch's)
    assert config["libraries"]["sentencepiece"] == sentencepiece.__version__
    assert config["libraries"]["torch"] == torch.__version__
    r = invoke("train", "--src", SAMPLE / "train.en", "--tgt", SAMPLE / "train.fr", "--batch-tokens", "many",
               "--model", tmp_path / "x", "--quiet")
    assert r.exit_code == 2 and "--batch-tokens" in r.stderr


def _batch_by_rows(src_ids, tgt_ids):
    """make_batch's definition, row by row."""
    s_max, t_max = max(map(len, src_ids)) + 1, max(map(len, tgt_ids)) + 1
    src = torch.full((len(src_ids), s_max), PAD_ID)
    tgt_in, tgt_out = torch.full((len(src_ids), t_max), PAD_ID), torch.full((len(src_ids), t_max), PAD_ID)
    for k, (s, t) in enumerate(zip(src_ids, tgt_ids, strict=True)):
        src[k, :len(s) + 1] = torch.tensor([*s, EOS_ID])
        tgt_in[k, :len(t) + 1] = torch.tensor([BOS_ID, *t])
        tgt_out[k, :len(t) + 1] = torch.tensor([*t, EOS_ID])
    return src, tgt_in, tgt_out


def _targets_by_rows(b, links, null_to_eos):
    """guide_targets' definition, row by row."""
    B, T = b.tgt_in.shape
    g = torch.zeros(B, T, b.src.size(1))
    for k, lk in enumerate(links):
        for i, j in lk:
            g[k, j, i] = 1.0
        if null_to_eos:
            for j in range(b.tgt_len[k]):
                if g[k, j].sum() == 0:
                    g[k, j, b.src_len[k]] = 1.0
    return g / g.sum(-1, keepdim=True).clamp(min=1.0)


pair = st.tuples(st.lists(st.integers(4, 50), min_size=1, max_size=9),
                 st.lists(st.integers(4, 50), min_size=1, max_size=9))


@settings(max_examples=60, deadline=None)
@given(st.lists(pair, min_size=1, max_size=6), st.randoms(use_true_random=False), st.booleans())
def test_whole_array_batches_and_targets_match_their_row_by_row_definition(pairs, rnd, null_to_eos):
    src_ids, tgt_ids = [s for s, _ in pairs], [t for _, t in pairs]
    b = make_batch(list(range(len(pairs))), src_ids, tgt_ids)
    src, tgt_in, tgt_out = _batch_by_rows(src_ids, tgt_ids)
    assert torch.equal(b.src, src) and torch.equal(b.tgt_in, tgt_in) and torch.equal(b.tgt_out, tgt_out)
    assert torch.equal(b.src_mask, src != PAD_ID)
    assert b.src_len == [len(s) for s in src_ids] and b.tgt_len == [len(t) for t in tgt_ids]
    links = [[(rnd.randrange(len(s)), rnd.randrange(len(t))) for _ in range(rnd.randrange(4))]
             for s, t in pairs]
    want = _targets_by_rows(b, links, null_to_eos)
    assert torch.equal(guide_targets(b, links, null_to_eos), want)
    assert torch.equal(guide_targets(b, link_arrays(links), null_to_eos), want)
    assert all(a.dtype == np.int32 for a in link_arrays(links))
