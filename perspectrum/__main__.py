"""``python -m perspectrum`` runs the command-line interface."""

from perspectrum.cli import main

main()
