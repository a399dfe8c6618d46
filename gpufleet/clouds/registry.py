"""The one list of clouds. A leaf: it imports nothing of the project, so every layer may read it.

Adding a cloud: add its name here, then its folders (gpufleet/clouds/<cloud>/ with the same module names as the
others, components/clouds/<cloud>/, policies/<cloud>/). gpufleet.clouds.lookup finds its backend by that name.
"""

from __future__ import annotations

from typing import Literal, get_args

# The one list of clouds, as a type for pydantic models and the JSON Schema, and as a tuple.
Cloud = Literal["aws", "azure", "alicloud"]
CLOUDS: tuple[str, ...] = get_args(Cloud)
