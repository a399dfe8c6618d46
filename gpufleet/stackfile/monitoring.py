"""The stack's budget and monitoring settings (`budget`, `monitoring`): what a cluster may cost, and who hears about
its GPUs; part of the `gpufleet:cluster` model (models.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from ..yaml_model import StrictModel

# One addr-spec of RFC 5322 in its common dot-atom form, on a domain with a dot (no display names, quoted local
# parts or IP literals: a mail provider's notification address never needs them); what SNS email subscriptions
# and Azure action groups take. email-validator (pydantic's EmailStr) is not a dependency of the project.
EMAIL_PATTERN = (
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)
Email = Annotated[str, Field(pattern=EMAIL_PATTERN, max_length=254)]


HOURS_PER_MONTH = 730


class Budget(StrictModel):
    max_hourly_usd: float | None = Field(
        None, gt=0, strict=True, description="USD/hour at max size; a plan over it fails"
    )
    alert_at_percent: list[int] = Field(
        default_factory=list,
        description="percents of the monthly budget (max_hourly_usd x 730 hours) at which the cloud's budget "
        "alerts the alarm target; empty: no budget alert (the default)",
    )

    @field_validator("alert_at_percent")
    @classmethod
    def _percents(cls, value: list[int]) -> list[int]:
        for percent in value:
            if isinstance(percent, bool) or not isinstance(percent, int) or not 1 <= percent <= 1000:
                raise ValueError(f"{percent!r} is not a whole percent from 1 to 1000")
        if len(set(value)) != len(value):
            raise ValueError("percents repeat; list each once")
        return value

    @model_validator(mode="after")
    def _needs_an_amount(self) -> Budget:
        if self.alert_at_percent and self.max_hourly_usd is None:
            raise ValueError("alert_at_percent needs max_hourly_usd: the monthly budget is max_hourly_usd x 730 hours")
        return self

    @property
    def monthly_usd(self) -> float | None:
        """The monthly amount the cloud's budget alerts on; None without max_hourly_usd."""
        return None if self.max_hourly_usd is None else self.max_hourly_usd * HOURS_PER_MONTH


class LowUtilisation(StrictModel):
    """When a group's GPUs count as under-used for the low-utilisation alarm."""

    below_percent: int = Field(10, ge=1, le=100, strict=True, description="average GPU utilisation under this")
    for_minutes: int = Field(120, ge=5, le=1440, strict=True, description="for this long")


class Alarms(StrictModel):
    """Per node group alarms: XID errors, uncorrectable ECC, low GPU utilisation, node-check failures."""

    target: str = Field(
        "create",
        min_length=1,
        description="create (an encrypted topic of the stack's) | the cloud's notification target: an SNS topic "
        "ARN (aws), an action group id (azure), a CloudMonitor alarm contact group name (alicloud)",
    )
    low_utilisation: LowUtilisation = Field(default_factory=LowUtilisation,
                                            description="an alarm when GPUs sit idle (utilisation below a threshold)")
    emails: list[Email] = Field(
        default_factory=list,
        description="people the created target notifies (alarms and budget alerts), each an email address that "
        "must confirm its subscription; a created target with nobody on it notifies no one",
    )

    @field_validator("emails")
    @classmethod
    def _each_once(cls, emails: list[str]) -> list[str]:
        repeated = sorted({e for e in emails if emails.count(e) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed twice; list each address once")
        return emails

    @model_validator(mode="after")
    def _emails_on_a_created_target(self) -> Alarms:
        if self.emails and self.target != "create":
            raise ValueError("emails are subscribed to the target gpufleet creates: with a brought target, add the "
                             "people to it there, or set target: create")
        return self


class Monitoring(StrictModel):
    """GPU metrics to the cloud's own monitoring, and the alarms on them."""

    gpu_metrics: bool = Field(
        True,
        strict=True,
        description="ship GPU metrics (DCGM and the cloud's agent) to the cloud's monitoring; alarms and idle need it",
    )
    alarms: Alarms | None = Field(None, description="per node group alarms; unset: none")
    log_retention_days: int = Field(
        30,
        strict=True,
        ge=1,
        description="days the cluster's logs are kept (AWS log group and flow logs, Alibaba event logstore); "
        "a value the cloud accepts (catalog limits)",
    )

    @model_validator(mode="after")
    def _alarms_read_the_metrics(self) -> Monitoring:
        if self.alarms is not None and not self.gpu_metrics:
            raise ValueError("alarms read the GPU metrics: set gpu_metrics: true or remove alarms")
        return self
