"""Pulumi entry point: everything lives in components/; this only runs the program."""

from components.program import build

build()
