"""`python -m components` runs the gpufleet command."""

from .cli import main

if __name__ == "__main__":  # `plan --all` workers are spawned and import the parent's main module again
    main()
