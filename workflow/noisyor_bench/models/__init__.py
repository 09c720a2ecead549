"""Generative models' mathematics, one folder per model family."""
