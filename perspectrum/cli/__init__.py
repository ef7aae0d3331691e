"""The ``perspectrum`` command."""
