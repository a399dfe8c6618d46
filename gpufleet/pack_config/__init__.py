"""The policy pack's config for a stack: each rule's level and settings as the Pulumi CLI reads them (settings),
the organisation's floors (floor), the one way settings combine, tightening only (tighten), and what a stack's
spec derives (derive). Shared by the offline policy runner and the pack's own servicer (policies/stack_settings.py),
so `gpufleet plan` and `pulumi up --policy-pack policies` judge a stack by the same settings."""
