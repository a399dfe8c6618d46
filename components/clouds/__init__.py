"""One sub-package per cloud, each with the same module names, registered in components.clouds.registry."""
