"""Node check: compare a GPU node with the expectation the bootstrap rendered (/etc/gpufleet/expect.json).

Runs on the node with only the standard library and nvidia-ml-py (pynvml, imported lazily).
"""
