"""Inference for topic models (APE, aviPAM): library-backed samplers and amortized encoders."""
