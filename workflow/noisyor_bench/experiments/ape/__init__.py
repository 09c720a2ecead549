"""The APE paper's experiments ("Rapid Model Comparison by Amortizing Across Models").

Every function takes the dataset's section of the grid (``grids.<grid>.ape.datasets.<name>``, a
validated dict: schema ``ape_dataset``).

* :mod:`.datasets` -- ``results/data/ape-<name>.npz``: toy bars and product reviews with their
  test models (bar-biased prior draws / collapsed-Gibbs LDA runs) and training-model pool;
* :mod:`.pairs` -- the (document, model) combinations: training pairs and the test combinations;
* :mod:`.train` -- one encoder (Standard, APE naive, APE model-aware) per seed, a run directory;
* :mod:`.baselines` -- VI from random initialisation and NUTS on the test combinations (run directories);
* :mod:`.evaluate` -- every method on the test combinations of one seed (Table 1's numbers,
  Figure 1's curves and errors, Figure 2's reconstructions).

The mathematics (model, ELBO, likelihood estimates, encoders, VI, NUTS) lives in
:mod:`noisyor_bench.models.topics.logistic_normal` and :mod:`noisyor_bench.inference.topics`.
"""
