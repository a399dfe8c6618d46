"""`gpufleet preflight`: read-only questions to the account that an offline plan cannot answer."""
