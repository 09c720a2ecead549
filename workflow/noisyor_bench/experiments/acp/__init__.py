"""The ACP paper's protocol: its experiment grid, runs, searches and baselines."""
