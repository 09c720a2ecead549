"""The ACP paper ("Amortized Inference of Variational Bounds for Learning Noisy-OR"): its numbers,
tables, figures and claims, built on the generic reporting modules of :mod:`noisyor_bench.reporting`.

* :mod:`.paper` -- the loader of ``paper_numbers.yaml``, the only place paper numbers are written down;
* synthetic data (Sections 4.2-4.4): :mod:`.synthetic_tables` (Fig. 3a, Table 4, Fig. 5, Fig. 3b),
  :mod:`.recovery_tables` (Fig. 4, supplement Figs. 1-2), :mod:`.synthetic_claims`,
  :mod:`.sensitivity` (Fig. 3a step-cap sensitivity), :mod:`.ablation` (ACP vs ACP-SG);
* real corpora (Section 4.5, supplement Section 5.1): :mod:`.text_runs` (reading the text runs),
  :mod:`.topics_table` (Table 5: top words and PMI), :mod:`.classification` (supplement Fig. 3),
  :mod:`.tsne` (supplement Figs. 4-6), :mod:`.text_claims`;
* figures: :mod:`.figures` (Figs. 3b, 4, 5), :mod:`.figures_sensitivity`, :mod:`.figures_text`.

Training itself is ``noisyor-bench acp-train-cell`` (:mod:`noisyor_bench.experiments.acp.runs`).
"""
