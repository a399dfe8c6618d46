"""Pulumi entry point: everything lives in components/; this only runs the program."""

from gpufleet.program import build

build()
