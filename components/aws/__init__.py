<<<<<<< HEAD
"""AWS components: network, fabric, storage, identity, node groups, image pipeline."""
=======
"""AWS components of gpufleet."""
>>>>>>> bootstrap
