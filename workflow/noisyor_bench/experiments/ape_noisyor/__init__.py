"""The APE question on noisy-OR ("Beyond the paper"; docs/ape_noisyor.md).

``settings``: the grid section ``grids.<grid>.ape_noisyor`` as a checked record; ``problems``:
the problem file of one family (training / validation / test problems, exact log p(x) of every
test candidate); ``runs``: an encoder trained across models (one run directory per seed) and
the per-datapoint baselines (SVI, LB-CDI), each scored on the test problems' candidates.
"""
