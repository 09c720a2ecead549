"""Inference methods (a registry), their base classes, the fit loops and convergence."""
