"""One sub-package per cloud, each with the same module names, registered in gpufleet.clouds.registry."""
