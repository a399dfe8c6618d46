"""AWS components of gpufleet."""
