"""Inputs: the raw-data registry, synthetic generators and text corpora."""
