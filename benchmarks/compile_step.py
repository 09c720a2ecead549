"""What ``torch.compile`` would gain on a SYN-PATTERN-sized training step.

A dense stand-in for one AVI step at the quick grid's sizes (batch 128, D = 64, K = 8, an
encoder of one hidden layer of 100, 10 relaxed-Bernoulli samples, Adam): eager against
``torch.compile`` of the loss, timed in one process on one thread, plus the latency of the
first compiled call (the compile itself, paid once per process).  It is a probe, not the
project's step: that one runs the likelihood on sparse kernels (``models/noisyor/sparse.py``,
custom autograd functions) under ``vmap``, which a compiled graph would have to treat as opaque
calls.  Prints one line.

    python benchmarks/compile_step.py
"""

from __future__ import annotations

import time

import torch

BATCH, D, K, HIDDEN, SAMPLES, STEPS = 128, 64, 8, 100, 10, 300


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    encoder = torch.nn.Sequential(torch.nn.Linear(D, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, K))
    theta_raw = torch.nn.Parameter(torch.randn(K, D) * 0.1 - 4)
    theta0_raw = torch.nn.Parameter(torch.full((D,), -4.0))
    optimizer = torch.optim.Adam([*encoder.parameters(), theta_raw, theta0_raw], lr=1e-3)
    x = (torch.rand(BATCH, D) < 0.1).float()
    prior = 0.125

    def nelbo(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        logits = encoder(x)
        q = torch.sigmoid(logits)
        z = torch.sigmoid((torch.log(u) - torch.log1p(-u) + logits) / 0.5)  # relaxed Bernoulli
        theta = torch.nn.functional.softplus(theta_raw)
        rates = torch.nn.functional.softplus(theta0_raw) + z @ theta  # (samples, batch, D)
        loglik = (x * torch.log(-torch.expm1(-rates).clamp_min(1e-12)) - (1 - x) * rates).sum(-1)
        kl = q * torch.log(q / prior + 1e-12) + (1 - q) * torch.log((1 - q) / (1 - prior) + 1e-12)
        return (kl.sum(-1) - loglik.mean(0)).mean()

    def step(loss) -> None:  # noqa: ANN001
        u = torch.rand(SAMPLES, BATCH, K).clamp(1e-6, 1 - 1e-6)
        optimizer.zero_grad()
        loss(x, u).backward()
        optimizer.step()

    def seconds_per_step(loss) -> float:  # noqa: ANN001
        for _ in range(20):
            step(loss)
        start = time.perf_counter()
        for _ in range(STEPS):
            step(loss)
        return (time.perf_counter() - start) / STEPS

    eager = seconds_per_step(nelbo)
    start = time.perf_counter()
    compiled = torch.compile(nelbo)
    step(compiled)
    first = time.perf_counter() - start
    fast = seconds_per_step(compiled)
    print(
        f"eager step {eager * 1e3:.2f} ms; compiled step {fast * 1e3:.2f} ms ({eager / fast:.2f}x); "
        f"first compiled call {first:.1f} s (break-even after {first / max(eager - fast, 1e-9):,.0f} steps)"
    )


if __name__ == "__main__":
    main()
