"""APE's (document, model) combinations: the training models, validation and test pairs.

* **Test combinations** (Table 1): the first ``n_eval`` documents crossed with the 10 test
  models, document-major, as the authors' ``itertools.product(documents, topics)`` truncated
  to 300 (30 documents x 10 models).  The documents are also training documents (the authors
  train on every document): what is unseen is the model.
* **Training models**: the pool (:class:`~noisyor_bench.data.synthetic.theta_pool.ThetaPool`),
  drawn once and held on the training device when it fits there (:func:`hold_pool`: half the
  device's free memory, or all but a reserve of a job's own memory limit), else drawn batch by
  batch; the same numbers either way.
  The Standard encoder's one model is the pool's model 0.
* **Validation pairs**: random documents with models of a separate validation pool (seed
  ``pool seed + 1``), the same for every training seed; the Standard encoder's validation
  pairs use its own model.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra.errors import DataError

log = logging.getLogger(__name__)

#: Pools up to this size (float32) are held whatever the device reports (the former fixed rule,
#: so the quick grid's pools never change path) and handed to training as a tensor, which lets
#: the standard and model-aware encoders take the compact path (see :func:`training_models`).
MATERIALISE_BYTES = 1 << 30
#: Share of the training device's free memory a held pool may take (the rest: the documents,
#: the encoder, the batch's activations, other processes).
HOLD_FRACTION = 0.5
#: Memory a job under its own (cgroup) limit keeps beside a held pool: the documents, the
#: encoder, torch, the batch's activations (peak 0.75-0.9 GB in the reviews' slices).
HOLD_RESERVE_BYTES = 2 << 30
#: ``available_memory``'s source when the figure is the job's own memory limit.
CGROUP_SOURCE = "room under the cgroup memory limit"
#: Models drawn per block while a pool is materialised (peak extra memory: one block).
HOLD_BLOCK_MODELS = 256
VALIDATION_MODELS = 50


@dataclass(frozen=True)
class EvalCombinations:
    """The evaluation pairs: row ``i`` is document ``doc_index[i]`` with model ``model_index[i]``."""

    x: torch.Tensor  # (P, V) counts
    theta: torch.Tensor  # (P, K, V)
    doc_index: np.ndarray  # (P,)
    model_index: np.ndarray  # (P,)

    @property
    def n_models(self) -> int:
        return int(self.model_index.max()) + 1

    def subset(self, n: int) -> EvalCombinations:
        """The first ``n`` combinations (document-major: the first documents with every model)."""
        n = min(int(n), self.x.shape[0])
        return EvalCombinations(self.x[:n], self.theta[:n], self.doc_index[:n], self.model_index[:n])


def evaluation_combinations(
    arrays: dict[str, np.ndarray], dtype: torch.dtype = torch.float64
) -> EvalCombinations:
    """Documents ``eval_documents`` x test models, document-major."""
    docs = np.asarray(arrays["eval_documents"], dtype=np.int64)
    thetas = np.asarray(arrays["test_thetas"])
    if docs.size == 0 or thetas.ndim != 3:
        raise DataError("dataset has no evaluation documents or no (M, K, V) test_thetas")
    doc_index = np.repeat(docs, thetas.shape[0])
    model_index = np.tile(np.arange(thetas.shape[0]), docs.size)
    x = torch.as_tensor(np.asarray(arrays["documents"])[doc_index], dtype=dtype)
    theta = torch.as_tensor(thetas[model_index], dtype=dtype)
    return EvalCombinations(x, theta, doc_index, model_index)


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.3g} GiB"


def _cgroup_room() -> int | None:
    """Bytes the process's cgroup may still allocate (limit - usage; None: no limit or unknown):
    a batch job's memory limit, which MemAvailable (the whole node's) does not show."""
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        try:
            limit = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # "max" / v1's huge value: no limit
            return max(0, int(limit) - usage)
        return None
    return None


def available_memory(device: torch.device | str) -> tuple[int | None, str]:
    """(bytes free for a pool on ``device``, where that figure comes from; None: unknown).

    CUDA: ``torch.cuda.mem_get_info(device)``'s free memory.  CPU: ``MemAvailable`` of
    /proc/meminfo (fallback: free physical pages from ``os.sysconf``), capped by the cgroup's
    remaining limit when the job runs under one."""
    dev = torch.device(device)
    if dev.type == "cuda":
        free, _total = torch.cuda.mem_get_info(dev)
        return int(free), f"free on {dev}"
    room, source = None, "available RAM"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                room = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        room = None
    if room is None:
        try:
            room = int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
            source = "free RAM (sysconf)"
        except (OSError, ValueError, AttributeError):
            return None, "RAM (unknown)"
    cgroup = _cgroup_room()
    if cgroup is not None and cgroup < room:
        return cgroup, CGROUP_SOURCE
    return room, source


def hold_pool(
    pool_bytes: int,
    device: torch.device | str = "cpu",
    available: int | None = None,
    fraction: float = HOLD_FRACTION,
    own_limit: bool | None = None,
) -> tuple[bool, str]:
    """Whether to draw a pool of ``pool_bytes`` once and hold it on ``device``; (decision, why).

    Why: drawing a step's ~100 models with numpy costs 0.2-0.4 s on one core (the paper grid's
    50,000-model reviews pool, 18 GB in float32), several times what indexing a held pool costs
    (``benchmarks/ape_theta_draws.py --mode held``), and the former fixed 1 GiB limit drew that
    pool per step even where the device holds it several times over (an H200's ~139 GiB, a
    node's 128 GB).  The pool is held when it takes at most ``fraction`` of the memory free
    on the training device (``available``: that memory, default :func:`available_memory`), so
    the documents, the encoder and other processes keep the rest; where that figure is the
    job's own memory limit (a cgroup: ``own_limit``, default when :func:`available_memory` read
    it there), no other process shares it, and the pool may take all but
    :data:`HOLD_RESERVE_BYTES` (so a cluster job requests the pool plus its base memory,
    :func:`noisyor_bench.experiments.ape.costs.train_mem_mb`, not twice the pool); pools up to
    :data:`MATERIALISE_BYTES` always are (the former rule).  Either choice gives the same
    numbers: a held model is the drawn one, bit for bit, and the steps draw the same indices."""
    dev = torch.device(device)
    size = _gib(pool_bytes)
    if pool_bytes <= MATERIALISE_BYTES:
        return True, f"pool {size} <= {_gib(MATERIALISE_BYTES)}: held on {dev}"
    source = f"free on {dev}" if dev.type == "cuda" else "available RAM"
    if available is None:
        available, source = available_memory(dev)
        own_limit = source == CGROUP_SOURCE if own_limit is None else own_limit
    if available is None:
        return False, f"pool {size} > {_gib(MATERIALISE_BYTES)} and the {source}: drawn per batch"
    if own_limit and dev.type == "cpu":
        share, budget = (
            f"{_gib(available)} {source} - {_gib(HOLD_RESERVE_BYTES)}",
            available - HOLD_RESERVE_BYTES,
        )
    else:
        share, budget = f"{fraction:g} x {_gib(available)} {source}", fraction * available
    if pool_bytes <= budget:
        return True, f"pool {size} <= {share}: held on {dev}"
    return False, f"pool {size} > {share}: drawn per batch"


def materialise_pool(
    pool: ThetaPool, device: torch.device | str = "cpu", block: int = HOLD_BLOCK_MODELS
) -> torch.Tensor:
    """The whole pool as one float32 tensor (size, K, V) on ``device``, drawn ``block`` models at
    a time into it (never twice its size at once: on the CPU each block is drawn straight into
    the tensor's memory, on a GPU through one block-sized host buffer)."""
    from noisyor_bench.infra.progress import Progress

    dev = torch.device(device)
    held = torch.empty((pool.size, pool.n_topics, pool.vocab_size), dtype=torch.float32, device=dev)
    host = held.numpy() if dev.type == "cpu" else None
    buffer = None if host is not None else torch.empty((block, *held.shape[1:]), dtype=torch.float32)
    ticker = (
        Progress(f"theta pool to {dev}", pool.size, unit="models")
        if pool.nbytes() > MATERIALISE_BYTES
        else None
    )
    for start in range(0, pool.size, block):
        stop = min(start + block, pool.size)
        if host is not None:
            pool.draw(np.arange(start, stop), out=host[start:stop])
        else:
            part = buffer[: stop - start]  # type: ignore[index]
            pool.draw(np.arange(start, stop), out=part.numpy())
            held[start:stop].copy_(part)
        if ticker is not None:
            ticker.update(stop)
    return held


class HeldPool:
    """A pool held on a device, served as a callable theta source: ``indices`` (any device) ->
    ``tensor[indices]`` gathered on the pool's device (no host round trip for a GPU pool)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def __call__(self, indices: torch.Tensor) -> torch.Tensor:
        return self.tensor[indices.to(self.tensor.device)]


def training_models(
    pool: ThetaPool,
    device: torch.device | str = "cpu",
    hold: bool | None = None,
    tensor_bytes: int = MATERIALISE_BYTES,
) -> tuple[torch.Tensor | HeldPool | object, int]:
    """The APE encoders' theta source for ``train_encoder`` and the number of models.

    ``device``: the training device; the pool is held there when :func:`hold_pool` says so
    (``hold``: force the choice), else each batch's models are drawn with numpy.  A held pool up
    to ``tensor_bytes`` is returned as a tensor (as before: ``train_encoder``'s compact path may
    then gather only the documents' words); a larger one as a :class:`HeldPool` callable, so
    it takes the dense path the per-batch draw takes and its numbers stay bit-identical to those
    of the per-batch draw (the compact path is the same objective, not the same rounding)."""
    dev = torch.device(device)
    if hold is None:
        hold, why = hold_pool(pool.nbytes(), dev)
    else:
        why = f"pool {_gib(pool.nbytes())}: {'held on ' + str(dev) if hold else 'drawn per batch'} (forced)"
    log.info("APE training models (%d x %d x %d float32): %s", pool.size, pool.n_topics, pool.vocab_size, why)
    if hold:
        held = materialise_pool(pool, dev)
        return (held if pool.nbytes() <= tensor_bytes else HeldPool(held)), pool.size

    def draw(indices: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(pool.draw(indices.cpu().numpy(), np.float32))

    return draw, pool.size


def validation_pairs(
    documents: np.ndarray, pool: ThetaPool, n_pairs: int, standard: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x (n, V), theta (n, K, V)) fixed validation pairs (module docstring)."""
    rng = np.random.default_rng(stream_seed(pool.seed, "ape-validation-pairs"))
    doc_idx = rng.integers(documents.shape[0], size=n_pairs)
    x = torch.as_tensor(documents[doc_idx], dtype=torch.float32)
    if standard:
        theta = torch.from_numpy(pool.draw([0])).expand(n_pairs, -1, -1).contiguous()
        return x, theta
    valid_pool = ThetaPool(pool.seed + 1, VALIDATION_MODELS, pool.n_topics, pool.vocab_size, pool.alpha)
    models = valid_pool.materialise(np.float32)
    model_idx = rng.integers(VALIDATION_MODELS, size=n_pairs)
    return x, torch.from_numpy(models[model_idx])
