"""The package version: one literal, read by pyproject.toml (dynamic version) and provenance."""

__version__ = "0.1.0"
