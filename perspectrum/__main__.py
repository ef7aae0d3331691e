"""``python -m perspectrum`` runs the command-line interface."""

from perspectrum.cli.app import main

main()
