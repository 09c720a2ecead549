"""aviPAM: the grid of runs (``cells``), the methods' fit adapters (``methods``) and
one run from corpus to run directory (``runs``)."""
