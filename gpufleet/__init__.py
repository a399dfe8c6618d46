"""The gpufleet application: CLI, stack files, offline engine, policy runner, reports, preflight."""
