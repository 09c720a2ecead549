"""The APE paper ("Rapid Model Comparison by Amortizing Across Models"): its numbers, Table 1,
Figures 1-2 and claims, from the evaluation runs of :mod:`noisyor_bench.experiments.ape`.

* :mod:`.paper` -- the loader of ``paper_numbers.yaml``, the only place APE paper numbers are written;
* :mod:`.table1` -- per-seed rows from ``runs/ape-eval/<dataset>/all/n0/seed<s>/metrics.json`` and Table 1;
* :mod:`.figures` -- Figure 1 (left: ELBO vs time; right: KDE of |ELBO_enc - ELBO_VI|), Figure 2;
* :mod:`.claims` -- the paper's claims and their verdicts (``tables/claims_ape.csv``).
"""
