"""AWS components: network, fabric, storage, identity, node groups, image pipeline."""
