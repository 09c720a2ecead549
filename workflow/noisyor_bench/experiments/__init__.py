"""The experiment protocol: config, the grid, random search and one run per directory."""
