"""Image lock, installer scripts and the node check that gpufleet images carry."""
