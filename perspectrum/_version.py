"""The one version string (the package metadata reads it too)."""

__version__ = "0.1.0"
