"""Noisy-OR inference: the five methods of the ACP paper (AVI, ACP, SVI, LB-CDI, UB-CDI), their
shared method interface, training loops and the method registry."""
