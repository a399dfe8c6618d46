"""gpufleet's Pulumi components: per cloud under clouds/<cloud>/ (the same module names in each), and the node
bootstrap they render into user data."""
