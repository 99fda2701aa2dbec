#!/usr/bin/env python3
"""Training throughput of attnalign's default RNN and Transformer vs JoeyNMT's and OpenNMT-py's RNNs.

Trains each configuration for a fixed number of updates on the English-French Hansards training
pairs (lower-cased, ../shared/data/enfr-hansards/train10k) with the same 1,000-token batches and the
same thread count, each in its own process, and prints target tokens/s, sentence pairs/s, peak memory
and the dev (trial) AER of argmax attention after N steps (attnalign only: JoeyNMT has no aligner).

    python bench/train_speed.py --steps 300 --threads 2 [--joeynmt-python PY] [--onmt-python PY]
    python bench/train_speed.py --epoch --threads 2 [--joeynmt-python PY] [--onmt-python PY]
    python bench/train_speed.py --both-directions --threads 2   # --parallel-directions off vs on

JoeyNMT 2.3.0 runs when ``--joeynmt-python`` names a Python with it installed (e.g. a venv made with
``pip install torch==2.13.0 joeynmt==2.3.0 importlib_metadata``: joeynmt imports it without
requiring it), OpenNMT-py when ``--onmt-python`` names one with it
(``pip install OpenNMT-py==3.5.1`` in a venv of its own: it pins torch < 2.3, which PyPI serves as a
CUDA build that also runs on CPUs); a row whose Python is not given is skipped with a message.
This is a benchmark, not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import emit, parse_result, peak_rss_mb, shared  # noqa: E402


def prepare(tmp: Path) -> Path:
    """Lower-cased training pairs and the trial set as plain files (JoeyNMT's layout: train.en ...)."""
    d = shared("enfr-hansards")
    for split, name in (("train10k", "train"), ("trial", "dev")):
        for lang in ("en", "fr"):
            text = (d / f"{split}.{lang}").read_text(encoding="utf-8").lower()
            (tmp / f"{name}.{lang}").write_text(text, encoding="utf-8")
    return d


def worker(args) -> None:
    """Train one attnalign configuration in this process and emit its numbers."""
    import torch

    from attnalign.data.alignments import read_alignments
    from attnalign.data.corpus import read_corpus
    from attnalign.training import DevSet, TrainOptions, train

    torch.set_num_threads(args.threads)
    if args.worker.startswith("both-"):
        both_directions(args)
        return
    tmp = Path(args.work)
    pairs = read_corpus(tmp / "train.en", tmp / "train.fr")
    dev_pairs = read_corpus(tmp / "dev.en", tmp / "dev.fr")
    gold, _ = read_alignments(shared("enfr-hansards", "trial.gold.naacl"),
                              src_lengths=[len(s) for s, _ in dev_pairs],
                              tgt_lengths=[len(t) for _, t in dev_pairs])
    t = time.perf_counter()
    budget = dict(epochs=1, max_length=10**6) if args.epoch else dict(max_steps=args.steps, epochs=1000)
    res = train(pairs, tmp / f"model_{args.worker}",
                TrainOptions.of(model_type=args.worker, batch_tokens=args.batch_tokens, threads=args.threads,
                                device="cpu", **budget),
                dev=DevSet(dev_pairs, gold), overwrite=True)["directions"]["forward"]
    emit({"system": f"attnalign {args.worker}", "tokens_per_s": res["tokens_per_s"],
          "pairs_per_s": res["pairs_per_s"], "peak_mb": round(peak_rss_mb()), "dev_aer": res["dev_aer"],
          "seconds": round(time.perf_counter() - t, 1), "tokens": res["train_tokens"],
          "update_s": res["train_s"], "updates": res["steps"]})


def both_directions(args) -> None:
    """One epoch of the RNN in both directions, one after the other or at once (--parallel-directions):
    the wall time of the whole train() call, process start-up included."""
    from attnalign.data.corpus import read_corpus
    from attnalign.training import TrainOptions, train

    tmp = Path(args.work)
    pairs = read_corpus(tmp / "train.en", tmp / "train.fr")
    mode = args.worker.removeprefix("both-")
    t = time.perf_counter()
    res = train(pairs, tmp / f"model_{args.worker}",
                TrainOptions.of(batch_tokens=args.batch_tokens, threads=args.threads, device="cpu", epochs=1,
                                max_length=10**6, direction="both", parallel_directions=mode),
                overwrite=True)["directions"]
    wall = time.perf_counter() - t
    tokens = sum(r["train_tokens"] for r in res.values())
    emit({"system": f"attnalign rnn, both, parallel {mode}", "tokens": tokens, "seconds": round(wall, 1),
          "tokens_per_s": round(tokens / wall), "peak_mb": round(peak_rss_mb())})


def both_table(tmp: Path, args) -> None:
    rows = []
    for mode in ("off", "on"):
        p = subprocess.run([sys.executable, __file__, "--worker", f"both-{mode}", "--work", str(tmp),
                            "--threads", str(args.threads), "--batch-tokens", str(args.batch_tokens)],
                           capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"attnalign both-{mode} failed:\n{p.stderr[-3000:]}")
        rows.append(parse_result(p.stdout))
    print(f"\nEnglish-French Hansards train10k (lower-cased), one epoch in each direction, "
          f"{args.batch_tokens}-token batches, {args.threads} CPU threads; wall time of the train() call")
    print(f"{'system':<36}{'tokens':>9}{'wall s':>8}{'tgt tok/s':>10}{'peak MiB (parent)':>19}")
    for r in rows:
        print(f"{r['system']:<36}{r['tokens']:>9}{r['seconds']:>8}{r['tokens_per_s']:>10}{r['peak_mb']:>19}")
    if rows[0]["tokens"] == rows[1]["tokens"]:
        print(f"\nsame tokens; at once / one after the other: {rows[0]['seconds'] / rows[1]['seconds']:.2f}x")


JOEY_CONFIG = """\
name: "bench"
joeynmt_version: "2.3.0"
data:
    train: "{tmp}/train"
    dev: "{tmp}/dev"
    dataset_type: "plain"
    src: {{lang: "en", level: "word", lowercase: False, max_length: 1000, voc_min_freq: 1}}
    trg: {{lang: "fr", level: "word", lowercase: False, max_length: 1000, voc_min_freq: 1}}
testing:
    beam_size: 1
    eval_metrics: ["bleu"]
training:
    random_seed: 1
    optimizer: "adam"
    learning_rate: 0.001
    scheduling: "warmupinversesquareroot"
    learning_rate_warmup: 200
    clip_grad_norm: 1.0
    label_smoothing: 0.1
    batch_size: {batch_tokens}
    batch_type: "token"
    normalization: "tokens"
    epochs: 1000
    updates: {steps}
    validation_freq: 1000000
    logging_freq: 10
    model_dir: "{tmp}/joey_model"
    overwrite: True
    shuffle: True
    use_cuda: False
    keep_best_ckpts: 1
model:
    encoder:
        type: "recurrent"
        rnn_type: "gru"
        embeddings: {{embedding_dim: 256}}
        hidden_size: 256
        bidirectional: True
        dropout: 0.2
        num_layers: 1
    decoder:
        type: "recurrent"
        rnn_type: "gru"
        embeddings: {{embedding_dim: 256}}
        hidden_size: 256
        dropout: 0.2
        hidden_dropout: 0.2
        num_layers: 1
        input_feeding: True
        init_hidden: "bridge"
        attention: "luong"
"""

JOEY_RUNNER = """\
import resource, runpy, sys, time, torch
torch.set_num_threads({threads})
sys.argv = ["joeynmt", "train", "{cfg}"]
t = time.perf_counter()
try:
    runpy.run_module("joeynmt", run_name="__main__")
finally:
    print("JOEY_DONE", time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def run_joey(python: str, tmp: Path, args) -> dict | None:
    cfg = tmp / "joey.yaml"
    steps = 10**9 if args.epoch else args.steps
    text = JOEY_CONFIG.format(tmp=tmp, steps=steps, batch_tokens=args.batch_tokens)
    if args.epoch:
        text = text.replace("epochs: 1000", "epochs: 1")
    cfg.write_text(text)
    code = JOEY_RUNNER.format(threads=args.threads, cfg=cfg)
    p = subprocess.run([python, "-c", code], capture_output=True, text=True)
    log = p.stdout + p.stderr
    rates = [float(x) for x in re.findall(r"Tokens per Sec:\s*([\d.]+)", log)]
    done = re.search(r"JOEY_DONE ([\d.]+) ([\d.]+)", log)
    if not rates or not done:
        print(f"JoeyNMT run failed (exit {p.returncode}); last output:\n{log[-3000:]}", file=sys.stderr)
        return None
    steady = rates[1:] or rates  # the first logging window includes start-up
    row = {"system": "JoeyNMT 2.3.0 rnn", "tokens_per_s": round(sum(steady) / len(steady)),
           "pairs_per_s": None, "peak_mb": round(float(done.group(2))), "dev_aer": None,
           "seconds": round(float(done.group(1)), 1)}
    # its own account of an epoch: target tokens consumed (EOS included) and training seconds
    epoch = re.search(r"num\. of seqs: (\d+), num\. of tokens: (\d+), ([\d.]+)\[sec\]", log)
    steps = re.findall(r"Step:\s*(\d+)", log)
    if epoch:
        row.update(tokens=int(epoch.group(2)), update_s=float(epoch.group(3)),
                   updates=int(steps[-1]) if steps else None)
    return row


ONMT_CONFIG = """\
save_data: {tmp}/onmt
src_vocab: {tmp}/onmt.vocab.src
tgt_vocab: {tmp}/onmt.vocab.tgt
src_vocab_size: 1000000
tgt_vocab_size: 1000000
overwrite: true
data:
    corpus_1:
        path_src: {tmp}/train.en
        path_tgt: {tmp}/train.fr
encoder_type: brnn
decoder_type: rnn
rnn_type: GRU
layers: 1
hidden_size: 256
word_vec_size: 256
global_attention: general
input_feed: 1
bridge: true
dropout: [0.2]
optim: adam
learning_rate: 0.001
adam_beta2: 0.98
max_grad_norm: 1.0
label_smoothing: 0.1
batch_type: tokens
batch_size: {batch_tokens}
normalization: tokens
num_workers: 0
seed: 1
report_every: 10
train_steps: {steps}
valid_steps: 100000000
save_checkpoint_steps: 100000000
save_model: {tmp}/onmt_model
"""

ONMT_RUNNER = """\
import resource, sys, time, torch
torch.set_num_threads({threads})
from onmt.bin.train import main
sys.argv = ["onmt_train", "-config", "{cfg}"]
t = time.perf_counter()
try:
    main()
finally:
    print("ONMT_DONE", time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def run_onmt(python: str, tmp: Path, args, tokens: int) -> dict | None:
    """OpenNMT-py's comparable RNN on the same files, cut where it has consumed ``tokens`` target
    tokens (its own count: each report's mean target tokens per batch times the batches since the last
    report), so that both rows are the same work up to one report of 10 updates."""
    cfg = tmp / "onmt.yaml"
    cfg.write_text(ONMT_CONFIG.format(tmp=tmp, batch_tokens=args.batch_tokens, steps=tokens // 600))
    vocab = subprocess.run([python, "-m", "onmt.bin.build_vocab", "-config", str(cfg), "-n_sample", "-1"],
                           capture_output=True, text=True)
    if vocab.returncode:
        print(f"OpenNMT-py build_vocab failed:\n{vocab.stderr[-2000:]}", file=sys.stderr)
        return None
    p = subprocess.run([python, "-c", ONMT_RUNNER.format(threads=args.threads, cfg=cfg)], capture_output=True,
                       text=True)
    log = p.stdout + p.stderr
    reports = re.findall(r"Step (\d+)/\s*\d+; .*?bsz:\s*[\d.]+/\s*([\d.]+)/.*?([\d.]+)/\s*([\d.]+) tok/s;"
                         r"\s*([\d.]+) sec", log)
    done = re.search(r"ONMT_DONE ([\d.]+) ([\d.]+)", log)
    if not reports or not done:
        print(f"OpenNMT-py run failed (exit {p.returncode}); last output:\n{log[-3000:]}", file=sys.stderr)
        return None
    consumed, last, seconds = 0.0, 0, 0.0
    for step, per_batch, _src_rate, _tgt_rate, sec in reports:
        consumed += float(per_batch) * (int(step) - last)
        last, seconds = int(step), float(sec)
        if consumed >= tokens:
            break
    else:
        print(f"OpenNMT-py consumed {consumed:.0f} of the {tokens} target tokens asked for", file=sys.stderr)
    version = re.search(r"^Version: (\S+)", subprocess.run([python, "-m", "pip", "show", "OpenNMT-py"],
                                                        capture_output=True, text=True).stdout, re.M)
    return {"system": f"OpenNMT-py {version.group(1) if version else '?'} rnn",
            "tokens_per_s": round(consumed / seconds), "pairs_per_s": None,
            "peak_mb": round(float(done.group(2))), "dev_aer": None, "seconds": round(seconds, 1),
            "tokens": round(consumed), "update_s": seconds, "updates": last}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-tokens", type=int, default=1000)
    ap.add_argument("--joeynmt-python", help="a Python interpreter that has joeynmt 2.3.0")
    ap.add_argument("--epoch", action="store_true",
                    help="equal work: one epoch over the same pairs for every system; tokens/s = the target "
                         "tokens each system reports it consumed / its training seconds (start-up excluded)")
    ap.add_argument("--onmt-python", help="a Python interpreter that has OpenNMT-py 3.5 (its own venv: it "
                                          "pins torch < 2.3)")
    ap.add_argument("--both-directions", action="store_true",
                    help="the RNN trained one epoch in both directions, one after the other and at once "
                         "(train --parallel-directions off / on); JoeyNMT does not run")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.worker:
        worker(args)
        return
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        prepare(tmp)
        if args.both_directions:
            both_table(tmp, args)
            return
        rows = []
        for kind in ("rnn", "transformer"):
            p = subprocess.run([sys.executable, __file__, "--worker", kind, "--work", str(tmp),
                                "--steps", str(args.steps), "--threads", str(args.threads),
                                "--batch-tokens", str(args.batch_tokens),
                                *(["--epoch"] if args.epoch else [])],
                               capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"attnalign {kind} failed:\n{p.stderr[-3000:]}")
            rows.append(parse_result(p.stdout))
        if args.onmt_python:
            onmt = run_onmt(args.onmt_python, tmp, args, rows[0]["tokens"])
            if onmt:
                rows.append(onmt)
        else:
            print("OpenNMT-py skipped: pass --onmt-python (a Python with OpenNMT-py 3.5)", file=sys.stderr)
        if args.joeynmt_python:
            joey = run_joey(args.joeynmt_python, tmp, args)
            if joey:
                rows.append(joey)
        else:
            print("JoeyNMT skipped: pass --joeynmt-python (a Python with joeynmt 2.3.0)", file=sys.stderr)
    if args.epoch:
        epoch_table(rows, args)
        return
    print(f"\nEnglish-French Hansards train10k (lower-cased), {args.steps} updates, "
          f"{args.batch_tokens}-token batches, {args.threads} CPU threads")
    print(f"{'system':<22}{'tgt tok/s':>10}{'pairs/s':>9}{'peak MiB':>10}{'trial AER':>11}{'time s':>8}")
    for r in rows:
        aer = "-" if r["dev_aer"] is None else f"{100 * r['dev_aer']:.1f}"
        pps = "-" if r["pairs_per_s"] is None else f"{r['pairs_per_s']:.0f}"
        print(f"{r['system']:<22}{r['tokens_per_s']:>10}{pps:>9}{r['peak_mb']:>10}{aer:>11}{r['seconds']:>8}")
    joey = next((r for r in rows if r["system"].startswith("JoeyNMT")), None)
    if joey:
        ratio = rows[0]["tokens_per_s"] / joey["tokens_per_s"]
        print(f"\nattnalign rnn / JoeyNMT rnn training throughput: {ratio:.2f}x")
    print(textwrap.dedent("""
        tokens/s counts target tokens incl. EOS over the update steps (JoeyNMT: mean of its logged
        'Tokens per Sec' after the first window; OpenNMT-py: the target tokens it reports, counted up to
        its first report past attnalign rnn's, over its seconds to there); trial AER: argmax attention
        on the 37 trial pairs."""))


def epoch_table(rows: list[dict], args) -> None:
    """Equal work: one epoch each; the ratio only where both consumed the same target tokens."""
    print(f"\nEnglish-French Hansards train10k (lower-cased), one epoch, {args.batch_tokens}-token "
          f"batches, {args.threads} CPU threads; tokens = target tokens incl. EOS each system reports")
    print(f"{'system':<22}{'tokens':>9}{'updates':>9}{'train s':>9}{'tgt tok/s':>10}{'peak MiB':>10}"
          f"{'trial AER':>11}")
    for r in rows:
        if "tokens" not in r:
            print(f"{r['system']:<22} (no epoch summary in its log)")
            continue
        r["epoch_rate"] = r["tokens"] / r["update_s"]
        aer = "-" if r["dev_aer"] is None else f"{100 * r['dev_aer']:.1f}"
        print(f"{r['system']:<22}{r['tokens']:>9}{r['updates'] or '-':>9}{r['update_s']:>9.1f}"
              f"{r['epoch_rate']:>10.0f}{r['peak_mb']:>10}{aer:>11}")
    for peer in rows[1:]:
        if peer["system"].startswith("attnalign") or "epoch_rate" not in peer or "epoch_rate" not in rows[0]:
            continue
        name = peer["system"].rsplit(" ", 2)[0]
        # OpenNMT-py is cut at its first report past the same tokens: equal work to within 5%
        if abs(rows[0]["tokens"] - peer["tokens"]) <= 0.05 * peer["tokens"]:
            ratio = rows[0]["epoch_rate"] / peer["epoch_rate"]
            print(f"attnalign rnn / {name} rnn, {rows[0]['tokens']} vs {peer['tokens']} target tokens: "
                  f"{ratio:.2f}x")
        else:
            print(f"no ratio with {name}: the systems consumed {rows[0]['tokens']} and {peer['tokens']} "
                  f"target tokens")


if __name__ == "__main__":
    main()
