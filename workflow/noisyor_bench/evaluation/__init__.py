"""Metrics of a fitted model and posterior: held-out NELBO, exact gap, F1/EM, recovery, PMI."""
