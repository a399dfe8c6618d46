"""`scheduler` fields of kind slurm: partitions over the node groups, the head node, power saving, accounting.

A VM cluster whose nodes register with a Slurm controller on a head node. Which groups, zones and types these
fields may name is checked against the resolved cluster in slurm_checks.py; here only their own shape.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from ..yaml_model import StrictModel

# Partition names as sbatch --partition and a shell word take them without quoting; a node group's name (a default
# partition's) always is one.
PARTITION_NAME = r"^[a-z][a-z0-9_-]*$"
# suspend_after_minutes becomes SuspendTime, in seconds (slurm.conf.5). At most a day: a GPU node idle longer is a
# cost nobody asked for; a stack that wants nodes kept sets size.min instead.
SUSPEND_MINUTES_MAX = 24 * 60
DEFAULT_SUSPEND_MINUTES = 30
PartitionName = Annotated[str, StringConstraints(pattern=PARTITION_NAME, max_length=40)]


class HeadNode(StrictModel):
    """The machine slurmctld runs on: small, on-demand, in the cluster's network."""

    instance_type: str | None = Field(
        None, description="a small CPU type of the cloud; null: the catalog's default CPU type of the cloud "
                           "(gpufleet/catalog/data/<cloud>.yaml system_types)"
    )
    disk_gb: int = Field(100, ge=30, le=16384, description="root disk (slurmctld state, logs)")
    zone: str | None = Field(None, description="one of network.zones; null: the first of them")


class SlurmFields(StrictModel):
    """The fields of `scheduler` only kind slurm takes (mixed into the Scheduler model)."""

    partitions: dict[PartitionName, Annotated[list[str], Field(min_length=1)]] = Field(
        default_factory=dict,
        description="slurm: partition name -> node groups (a group may join several); empty: one partition per "
                    "node group, named after it",
    )
    head_node: HeadNode | None = Field(None, description="slurm: the controller's machine; null: the defaults")
    suspend_after_minutes: int | None = Field(
        None, ge=1, le=SUSPEND_MINUTES_MAX,
        description=f"slurm: minutes a node stays idle before its group gives it back; null: {DEFAULT_SUSPEND_MINUTES}",
    )
    accounting: bool = Field(False, description="slurm: slurmdbd job accounting (not built yet: false only)")

    def partitions_over(self, group_names: list[str]) -> dict[str, list[str]]:
        """The partitions the cluster gets: as written, or one per node group named after it."""
        return dict(self.partitions) if self.partitions else {name: [name] for name in group_names}

    def slurm_fields_set(self) -> list[str]:
        """The slurm-only fields the stack file set, for the refusal on another kind."""
        return [name for name in ("partitions", "head_node", "suspend_after_minutes", "accounting")
                if getattr(self, name)]


def slurm_fields_problem(fields: SlurmFields) -> str | None:
    """Why kind slurm cannot take these fields as written; None where it can."""
    if fields.accounting:
        return ("accounting: true needs slurmdbd and its database, which gpufleet does not build yet; use "
                "accounting: false")
    return None
