#!/usr/bin/env python3
"""Where an update of the preset's student spends its time, by network, batch size and precision.

On the En-Fr protocol corpus of bench/quality.py (10,484 pairs, 4,000 sentencepiece pieces a side, a
diagonal guide standing in for the teacher's links: the same tensors, none of the teacher's minutes), one
process builds the forward direction's run once and times ``--steps`` updates of each (network, batch
tokens, precision) after two warm-up updates: the whole update, and in a second pass its parts, each
ended by a device synchronisation: the batch's tensors and guide targets on the host, the forward pass
with the losses (which builds the guide targets again, as an update does), the backward pass and the
optimizer step. One more update runs under torch.profiler and is counted: the operator calls (aten ops
called from Python or autograd, not those an operator calls inside it) and, on CUDA, the kernel launches
and copies, so that a change's effect on launches is seen on a CPU before it meets a GPU. Networks:
``rnn`` (the preset's GPU network, 256 wide, with input feeding), ``rnn-nif`` (``--no-input-feeding``),
``transformer``, ``rnn-nif-nt`` / ``transformer-nt`` (``--no-translation``: the alignment head's
objective alone), and ``rnn-cpu`` (the preset's CPU student as the preset now gives it). Prints
one JSON line per configuration and writes bench/results/gpu_steps.{csv,json} (``--results NAME``).

    python bench/gpu_steps.py --device cuda
    python bench/gpu_steps.py --device cpu --batch-tokens 2000 16000 --precisions fp32 --steps 5
    python bench/gpu_steps.py --device cpu --networks rnn-cpu --batch-tokens 2000 --precisions fp32 \
        --threads 1 --ops 12      # one training process's update, and where its time goes

A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def setup(device: str, tmp: Path):
    import quality
    import torch

    from attnalign.data.corpus import read_corpus
    from attnalign.training.config_file import preset_options
    from attnalign.training.run import DirectionRun

    d = quality.build("enfr")["dir"]
    pairs = read_corpus(d / "corpus.src", d / "corpus.tgt")
    links = [[(min(j * len(s) // len(t), len(s) - 1), j) for j in range(len(t))] for s, t in pairs]
    from attnalign.nmt.checkpoint import FORMAT_VERSION

    config = {"format_version": FORMAT_VERSION, "directions": ["forward"]}
    (tmp / "config.json").write_text(json.dumps(config))
    opts = preset_options("align", batch_tokens=2000)
    run = DirectionRun(pairs, tmp, "forward", opts, asdict(opts.network.typed()), torch.device(device), links)
    run._prepare(False)
    return run


# the preset's network on a GPU, with input feeding (the preset's everywhere before its CPU student moved)
WIDE = {"hidden": 256, "emb_dim": 256, "translation": True, "input_feeding": True}
NETWORKS = {"rnn": ("rnn", WIDE), "rnn-nif": ("rnn", {**WIDE, "input_feeding": False}),
            "transformer": ("transformer", {"translation": True}),
            # without the output layer and its loss (--no-translation): what the alignment head costs
            "rnn-nif-nt": ("rnn", {**WIDE, "input_feeding": False, "translation": False}),
            "transformer-nt": ("transformer", {"translation": False}),
            # --preset align's student on a CPU, as the preset gives it
            "rnn-cpu": ("rnn", {})}


def configure(run, network: str, batch_tokens: int, precision: str) -> None:
    """The run's network rebuilt as ``network`` (NETWORKS), batches of ``batch_tokens``, ``precision``."""
    import torch

    from attnalign.nmt.models import build_model
    from attnalign.training.options import network_keys
    from attnalign.training.run import _adam

    model_type, changes = NETWORKS[network]
    run.base_config = getattr(run, "base_config", run.options.network.config)  # the preset's
    base = {k: v for k, v in run.base_config.items() if k in network_keys(model_type)}
    network = replace(run.options.network, model_type=model_type).with_config({**base, **changes})
    opts = replace(run.options, network=network).updated(batch_tokens=batch_tokens, precision=precision)
    run.options, run.model_config = opts, asdict(network.typed())
    torch.manual_seed(1)
    run.model = run.net = build_model(model_type, run.model_config, len(run.loaded.src_vocab),
                                      len(run.loaded.tgt_vocab)).to(run.device).train()
    run.opt = _adam(run.model.parameters(), opts.base_lr)
    run.progress.offset = 0


def counts(run, group) -> dict:
    """One update under torch.profiler: its operator calls, and on CUDA its kernel launches and copies."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from attnalign.training.run import Silent

    cuda = run.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        run._update(group, Silent())
        run._check()
        if cuda:
            torch.cuda.synchronize()
    events = prof.events()
    names = [e.name for e in events]
    # dispatches from Python and autograd, not the ops an operator calls inside (a CPU GRU's steps)
    out = {"aten_ops": sum(e.name.startswith("aten::") and (e.cpu_parent is None or not
                                                           e.cpu_parent.name.startswith("aten::"))
                           for e in events)}
    if cuda:
        out["kernel_launches"] = sum("LaunchKernel" in n for n in names)
        out["copies"] = sum(n.startswith("cudaMemcpy") for n in names)
        out["syncs"] = sum(n in ("cudaStreamSynchronize", "cudaDeviceSynchronize") for n in names)
    return out


def batches(run, n: int) -> list[list[int]]:
    """The run's first ``n`` batches of an epoch, from its start again where it has fewer."""
    groups = run._epoch_batches()
    return [groups[k % len(groups)] for k in range(n)]


def operators(run, steps: int, top: int) -> list[dict]:
    """The ``top`` operators by their own CPU time (not their callees') over ``steps`` updates under
    torch.profiler: milliseconds and calls an update, and their share of the update's own time."""
    from torch.profiler import ProfilerActivity, profile

    from attnalign.training.run import Silent

    groups = batches(run, steps)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for g in groups:
            run._update(g, Silent())
        run._check()
    ops = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in ops)
    ops = sorted(ops, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return [{"op": e.key, "self_ms_per_update": round(e.self_cpu_time_total / 1000 / steps, 2),
             "calls_per_update": round(e.count / steps, 1),
             "share": round(e.self_cpu_time_total / total, 3)} for e in ops]


def measure(run, steps: int) -> dict:
    import torch

    from attnalign.nmt.batching import make_batch
    from attnalign.training.guide import guide_targets
    from attnalign.training.run import Silent

    sync = torch.cuda.synchronize if run.device.type == "cuda" else (lambda: None)
    groups = batches(run, steps + 2)
    for g in groups[:2]:
        run._update(g, Silent())
    run._check()
    sync()
    tokens = sum(sum(run.lengths[k][1] + 1 for k in g) for g in groups[2:])
    t0 = time.perf_counter()
    for g in groups[2:]:
        run._update(g, Silent())
    run._check()
    sync()
    whole = (time.perf_counter() - t0) / steps
    parts = {"host": 0.0, "forward": 0.0, "backward_step": 0.0}
    for g in groups[2:]:
        t = time.perf_counter()
        b = make_batch(g, [run.src_ids[k] for k in g], [run.tgt_ids[k] for k in g]).to(run.device)
        guide_targets(b, [run.tok_links[k] for k in g], null_to_eos=True)
        sync()
        t1 = time.perf_counter()
        objective, _, _ = run._objective(b, g)
        sync()
        t2 = time.perf_counter()
        run.opt.zero_grad(set_to_none=True)
        objective.backward()
        torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.options.schedule.clip)
        run.opt.step()
        sync()
        t3 = time.perf_counter()
        parts["host"] += t1 - t
        parts["forward"] += t2 - t1
        parts["backward_step"] += t3 - t2
    peak = torch.cuda.max_memory_allocated() / 2**20 if run.device.type == "cuda" else 0.0
    target_len = max(run.lengths[k][1] + 1 for k in groups[2]) if groups[2:] else 0
    return {"ms_per_update": round(1000 * whole, 1), "tokens_per_s": round(tokens / steps / whole),
            **{f"{k}_ms": round(1000 * v / steps, 1) for k, v in parts.items()},
            "peak_gpu_mb": round(peak), "counted_target_len": target_len, **counts(run, groups[2])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    ap.add_argument("--batch-tokens", type=int, nargs="+", default=[2000, 8000, 32000])
    ap.add_argument("--precisions", nargs="+", default=["bf16", "fp32"])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--threads", type=int, help="torch's CPU threads (a direction's process in training "
                                                 "has half of the run's)")
    ap.add_argument("--ops", type=int, default=0, metavar="K",
                    help="also write NAME_ops.csv: each configuration's K costliest operators an update")
    ap.add_argument("--results", default="gpu_steps")
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA GPU", file=sys.stderr)
        return
    rows, op_rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        run = setup(args.device, Path(tmp))
        for network in args.networks:
            for tokens in args.batch_tokens:
                for precision in args.precisions:
                    if run.device.type == "cuda":
                        torch.cuda.reset_peak_memory_stats()
                    configure(run, network, tokens, precision)
                    row = {"device": args.device, "network": network, "batch_tokens": tokens,
                           "precision": precision, **measure(run, args.steps)}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
                    common.write_rows(args.results, rows)
                    if args.ops:
                        keys = {k: row[k] for k in ("network", "batch_tokens", "precision")}
                        op_rows += [{**keys, **op} for op in operators(run, args.steps, args.ops)]
                        common.write_rows(f"{args.results}_ops", op_rows)


if __name__ == "__main__":
    main()
