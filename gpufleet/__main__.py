"""`python -m gpufleet` runs the gpufleet command."""

from gpufleet.cli import main

if __name__ == "__main__":  # `plan --all` workers are spawned and import the parent's main module again
    main()
