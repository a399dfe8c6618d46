"""Whether every pod the stack creates, and every shipped example job, has a node group that admits it."""

SCHEDULABLE = "kubernetes-pods-schedulable"
"""The name a pod with no node is reported under among the plan's violations (a plan check, not a pack rule)."""
