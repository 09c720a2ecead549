"""The APE question on noisy-OR (docs/ape_noisyor.md): table, figure and claims."""
