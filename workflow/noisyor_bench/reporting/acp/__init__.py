"""Real-corpus experiments: paper Section 4.5 (Table 5) and supplement Section 5.1 (Figs. 3-6).

* :mod:`noisyor_bench.experiments.grid.corpora` -- the ``grids.<g>.text`` grid: cells, seeds, K per experiment, validation;
* :mod:`.topics` -- Table 5: top words of each learned topic and their average pairwise PMI;
* :mod:`.classify` -- supplement Fig. 3: exact match of a linear multi-label classifier on the
  test-set posteriors, by cross-validation on the test set, against the raw-``x`` baseline;
* :mod:`.tsne` -- supplement Figs. 4-6: 2-D t-SNE of the test posteriors and a quantitative
  companion (k-nearest-neighbour accuracy of the category in the embedding);
* :mod:`.claims` -- the verdicts of the paper's statements about these experiments;
* :mod:`.plots` -- the figures.

Training itself is ``noisyor-bench train-cell --latents K`` (:mod:`noisyor_bench.experiments.runs`, learning
mode on datasets without ground truth).
"""
