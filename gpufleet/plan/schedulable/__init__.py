"""Whether every pod the stack creates, and every shipped example job, has a node group that admits it."""
