"""Pulumi entry point: the application is gpufleet/, the Pulumi components components/; this only runs the program."""

from gpufleet.program import build

build()
