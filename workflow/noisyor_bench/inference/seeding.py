"""Seeding of runs: one user seed and a run's ``init_key`` give every random stream of a fit.

A run's root seed is :func:`derive_init_seed` of its seed and :func:`run_init_key`; each
training stream (generative and encoder initialisation, shuffling, Monte Carlo noise) is then
:func:`stream_seed` / :func:`stream_generator` of that root and the stream's name, so adding a
stream never shifts another.
"""

from __future__ import annotations

import zlib

import numpy as np
import torch

from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.hashing import sha256_bytes


def stream_seed(seed: int, stream: str) -> int:
    """A 64-bit seed for the named random stream of run ``seed``.

    Independent streams (``"generative-init"``, ``"encoder-init"``, ``"shuffle"``, ...) come
    from one user seed through :class:`numpy.random.SeedSequence`, so adding a stream never
    shifts another, and two methods that use the same stream name with the same seed (e.g.
    the generative initialisation in learning mode) start from identical values.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer; got {seed!r}")
    key = zlib.crc32(stream.encode("utf-8"))
    words = np.random.SeedSequence(int(seed), spawn_key=(key,)).generate_state(2, dtype=np.uint32)
    return (int(words[0]) << 32 | int(words[1])) & 0x7FFF_FFFF_FFFF_FFFF


FINAL_ROLE = "final"


def run_init_key(experiment: str, dataset: str, n_train: int, draw: int | None = None, init: int = 0) -> str:
    """The initialisation key of one run of the grid cell (experiment, dataset, N_train).

    ``"<experiment>/<dataset>/n<N_train>/draw<d>"`` for search draw ``d``,
    ``"<experiment>/<dataset>/n<N_train>/final"`` for the cell's final (reported) seeds.  The
    method is not part of it, so AVI, ACP, SVI, LB-CDI, ... of one (cell, draw-or-final, seed)
    start from the same generative parameters (paired comparisons), while every draw, every
    seed and the final runs get initialisations of their own, as independent runs of a random
    search would.  A draw scored on several initialisations (``search.inits_per_draw``) runs
    init 0 under ``draw<d>`` (as a one-initialisation search did) and init ``j >= 1`` under
    ``draw<d>/init<j>``.
    """
    if isinstance(init, bool) or not isinstance(init, (int, np.integer)) or init < 0:
        raise ConfigError(f"initialisation index must be a non-negative integer; got {init!r}")
    if init and draw is None:
        raise ConfigError("an initialisation index > 0 belongs to a search draw; the final runs have none")
    if draw is not None and (isinstance(draw, bool) or not isinstance(draw, (int, np.integer)) or draw < 0):
        raise ConfigError(f"search draw must be a non-negative integer; got {draw!r}")
    role = FINAL_ROLE if draw is None else f"draw{int(draw)}" + (f"/init{int(init)}" if init else "")
    return f"{experiment}/{dataset}/n{int(n_train)}/{role}"


def derive_init_seed(seed: int, init_key: str | None) -> int:
    """The root seed of a run's training streams: ``seed`` itself without ``init_key``,
    else a 63-bit seed from ``SeedSequence([seed, *sha256(init_key) as 8 uint32 words])``.

    Every training stream of the run (``"generative-init"``, ``"<method>-encoder-init"``,
    ``"shuffle"``, ``"elbo-samples"``, ``"validation"``, ...) is then :func:`stream_seed` of
    this value, so the same (seed, key) always gives the same run and a different seed or key
    gives independent streams.  A full-width hash (not CRC32) keeps distinct keys apart.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer; got {seed!r}")
    if init_key is None:
        return int(seed)
    if not isinstance(init_key, str) or not init_key:
        raise ConfigError(f"init_key must be a non-empty string or None; got {init_key!r}")
    digest = bytes.fromhex(sha256_bytes(init_key.encode("utf-8")))
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 32, 4)]
    state = np.random.SeedSequence([int(seed), *words]).generate_state(2, dtype=np.uint32)
    return (int(state[0]) << 32 | int(state[1])) & 0x7FFF_FFFF_FFFF_FFFF


def stream_generator(seed: int, stream: str, device: torch.device | str = "cpu") -> torch.Generator:
    """``torch.Generator`` on ``device`` seeded with :func:`stream_seed`."""
    return torch.Generator(device=torch.device(device)).manual_seed(stream_seed(seed, stream))


__all__ = ["FINAL_ROLE", "derive_init_seed", "run_init_key", "stream_generator", "stream_seed"]
