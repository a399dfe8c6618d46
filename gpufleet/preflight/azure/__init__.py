"""Azure preflight: read-only questions to the subscription (quotas, sizes offered per zone, brought resources,
pinned images, providers and features) that an offline plan cannot answer."""

from .clients import AzureClients, default_clients, make_clients
from .run import preflight

__all__ = ["AzureClients", "default_clients", "make_clients", "preflight"]
