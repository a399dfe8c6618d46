"""Alicloud cloud: one module per concern, the same names as every other cloud folder."""
