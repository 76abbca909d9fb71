"""What a child process of OpenNMT-py 3.5.1 sees of onmt_xl (issue 39, item 4): used by
``tests/test_multiprocess.py`` and ``tools/bench/bench_gpu.py``.

OpenNMT starts children two ways, both with the ``spawn`` start method (a fresh interpreter, nothing inherited):
``onmt/bin/train.py`` runs ``onmt.utils.distributed.spawned_train(process_fn, opt, device_id, error_queue)`` per
rank when ``-world_size`` > 1, and ``build_dynamic_dataset_iter`` hands its iterator (our transform inside) to a
``DataLoader`` whose ``-num_workers`` workers unpickle it. This module's top level imports the standard library only,
so that a child unpickling these functions imports ``onmt`` the way OpenNMT's own child does: through the hook.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

#: what a child must find registered (a sample of each kind: encoders, transforms, options)
ENCODERS = ("xl_inxl", "xl_headxl", "xl_combination", "xl_disan", "xl_relative")
TRANSFORMS = ("xl_position", "xl_prereorder")
OPTIONS = ("-xl_preorderer", "-xl_source", "-xl_noise", "-xl_heads", "-xl_cache_size", "-xl_cpu_precision")


def registered_here() -> dict:
    """Which of onmt_xl's encoders, transforms and ``onmt_train`` options this process has, after ``import onmt``
    (the hook's moment), and whether batching carries ``xl_pos`` (the positions seam)."""
    import onmt  # noqa: F401  - the hook registers here
    import onmt.inputters.dynamic_iterator as dynamic_iterator
    from onmt.bin.train import _get_parser
    from onmt.encoders import str2enc
    from onmt.transforms import AVAILABLE_TRANSFORMS

    parser = _get_parser()
    strings = set(parser._option_string_actions)
    import onmt_xl

    return {
        "pid": os.getpid(),
        "onmt_xl": str(Path(onmt_xl.__file__).resolve().parent),
        "encoders": sorted(e for e in ENCODERS if e in str2enc),
        "transforms": sorted(t for t in TRANSFORMS if t in AVAILABLE_TRANSFORMS),
        "options": sorted(o for o in OPTIONS if o in strings),
        "tensorify_carries_xl_pos": bool(getattr(dynamic_iterator.tensorify, "_onmt_xl", False)),
    }


def report_registry(queue) -> None:
    """Child target: put :func:`registered_here` on ``queue``."""
    queue.put(registered_here())


def transform_in_child(queue, pickled: bytes, sentences) -> None:
    """Child target, as a data worker: unpickle a transform (``XLPositionTransform``, as ``DataLoader`` ships it),
    apply it to ``sentences`` twice and report the positions, the cache's size after each pass and the registry."""
    transform = pickle.loads(pickled)
    first = [transform.apply({"src": s.split()}, is_train=True)["xl_pos"] for s in sentences]
    cached_after_first = len(transform.cache)
    second = [transform.apply({"src": s.split()}, is_train=True)["xl_pos"] for s in sentences]
    queue.put({"first": first, "second": second, "cache": [cached_after_first, len(transform.cache)],
               **registered_here()})


def distributed_step(opt, device_id) -> None:
    """``process_fn`` of OpenNMT's ``spawned_train`` (it has already joined the process group, here ``gloo``):
    in this rank, build the model from ``opt`` on the CPU, one training batch of this rank's share of the corpus
    (stride ``world_size``, offset ``device_id``, as ``train_single`` reads), its forward pass with the batch's
    ``xl_pos`` and a backward pass, then average the gradients over the ranks with OpenNMT's
    ``all_reduce_and_rescale_tensors``. Writes ``opt.save_data + f".rank{device_id}.json"``."""
    import copy

    import torch
    import torch.distributed as dist
    from onmt.constants import CorpusTask
    from onmt.inputters.dynamic_iterator import build_dynamic_dataset_iter
    from onmt.model_builder import build_model
    from onmt.train_single import _init_train
    from onmt.utils.distributed import all_reduce_and_rescale_tensors

    from onmt_xl.opennmt.encoders.common import feeding_xl_positions

    info = registered_here()
    cpu_opt = copy.deepcopy(opt)
    cpu_opt.gpu_ranks, cpu_opt.world_size = [], 1  # the model on the CPU; the process group is the ranks'
    checkpoint, vocabs, transforms_cls = _init_train(cpu_opt)
    torch.manual_seed(opt.seed)
    model = build_model(cpu_opt, cpu_opt, vocabs, checkpoint, -1)
    data = build_dynamic_dataset_iter(cpu_opt, transforms_cls, vocabs, task=CorpusTask.TRAIN,
                                      stride=len(opt.gpu_ranks), offset=device_id)
    batch, _ = next(iter(data))
    src, tgt = batch["src"], batch["tgt"]
    with feeding_xl_positions(batch.get("xl_pos")):
        dec_out, _ = model(src, tgt, batch["srclen"], bptt=False)
    loss = model.generator(dec_out).float().logsumexp(-1).mean()
    loss.backward()
    grads = [p.grad.data for p in model.parameters() if p.requires_grad and p.grad is not None]
    all_reduce_and_rescale_tensors(grads, float(dist.get_world_size()))
    info.update(rank=dist.get_rank(), world_size=dist.get_world_size(), backend=dist.get_backend(),
                has_xl_pos="xl_pos" in batch, first_src_ids=batch["src"][0, :, 0].tolist(),
                loss=float(loss), grad_sum=float(sum(g.double().sum() for g in grads)),
                encoder=type(model.encoder).__name__)
    Path(opt.save_data + f".rank{device_id}.json").write_text(json.dumps(info))
