"""Readers of the lock's facts from their sources (apt indexes, downloads, registries, cloud APIs), with the user's
network and credentials: what `gpufleet lock resolve` runs. Nothing offline (`plan`, the pack) imports this package.
"""
