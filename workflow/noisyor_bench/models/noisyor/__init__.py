"""The noisy-OR network (ACP paper): likelihood, exact inference, ELBO, bounds, sparse kernels."""
