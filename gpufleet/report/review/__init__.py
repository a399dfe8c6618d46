"""What a plan will do, for review: the inputs that matter of each recorded resource, as lines by concern.

Reads the plan JSON's resources (secrets already masked), so `plan`, its Markdown report and `diff` show the same."""

from __future__ import annotations

from collections.abc import Sequence

from .grants import grant_lines
from .ingress import ingress_lines
from .inputs_that_matter import input_lines
from .model import CONCERNS, Resource, Resources, ReviewLine


def review(resources: Sequence[Resource]) -> list[ReviewLine]:
    """Every review line of the resources, by concern in CONCERNS order, then by subject (a grant's identity)."""
    recorded = Resources(resources)
    lines = [*ingress_lines(recorded), *input_lines(resources), *grant_lines(recorded)]
    return sorted(lines, key=lambda line: (CONCERNS.index(line.concern), line.subject))
