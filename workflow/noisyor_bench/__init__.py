"""noisyor-bench: reproducible benchmark of amortized inference in noisy-OR networks.

The package holds the science (model, datasets, inference methods, metrics); the
Snakemake rules under ``rules/`` only call its command-line interface.
"""

__version__ = "0.1.0"
