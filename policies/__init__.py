"""gpufleet CrossGuard policy pack.

Rules live in importable modules: common/ (every cloud) and one package per cloud (aws/, azure/,
alicloud/), merged in registry.py. Only __main__.py builds the PolicyPack, because constructing one
starts the analyzer's gRPC server and blocks.
"""
