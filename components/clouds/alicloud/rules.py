"""Checks only Alibaba Cloud stacks need: none yet beyond the shared ones (spec/rules.py).

The eRDMA checks (deployment set limits, vSwitch sizing) arrive with the Alibaba cluster components.
"""

CHECKS = ()
