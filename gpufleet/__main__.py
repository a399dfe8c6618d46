"""`python -m gpufleet` runs the gpufleet command."""

from gpufleet.cli import main

if __name__ == "__main__":  # `plan --all`'s fork server (or spawned workers) imports the main module again
    main()
