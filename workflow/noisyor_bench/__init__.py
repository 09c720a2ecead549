"""noisyor-bench: reproducible benchmark of amortized inference in noisy-OR networks.

The package holds the science (model, datasets, inference methods, metrics); the
Snakemake rules under ``rules/`` only call its command-line interface.
"""

from noisyor_bench.infra.version import __version__

__all__ = ["__version__"]
