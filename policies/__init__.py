"""gpufleet CrossGuard policy pack.

Rules live in importable modules (aws.py, crosscloud.py; azure.py and alicloud.py slot in the same
way) and are collected in registry.py. Only __main__.py builds the PolicyPack, because constructing
one starts the analyzer's gRPC server and blocks.
"""
