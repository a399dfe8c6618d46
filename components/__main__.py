"""`python -m components` runs the gpufleet command."""

from .cli import main

main()
