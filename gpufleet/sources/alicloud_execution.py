"""The images one Alibaba Cloud image pipeline execution made, read from the execution itself (`gpufleet images pin`).

Neither the pipeline nor the execution resource of pulumi-alicloud outputs the image it bakes, and a name prefix with
a lower time bound also takes a later execution's image. DescribeImagePipelineExecutions does name it: alibabacloud_ecs
20140526 models DescribeImagePipelineExecutionsRequest (region_id, execution_id) and its response body
(ImagePipelineExecution.ImagePipelineExecutionSet[]: ExecutionId, Status, ImageId, CreationTime). Its copies in the
template's other regions (ToRegionId) are not named there: a copy is the one own image in that region with exactly
the built image's name (DescribeImagesRequest image_id / image_name, image_owner_alias self).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .alicloud import _answer
from .http import SourceError


@dataclass(frozen=True)
class ExecutionImages:
    execution_id: str
    status: str
    images: dict[str, str]
    """Region -> image id the execution made (empty unless its status is SUCCESS)."""


def execution_images(client_for: Callable[[str], Any], regions: Sequence[str], execution_id: str) -> ExecutionImages:
    """What `execution_id` (run in regions[0], copying to the rest) made; `client_for(region)` gives an ECS client."""
    from alibabacloud_ecs20140526 import models

    build, *copies = regions
    source = f"ecs:DescribeImagePipelineExecutions RegionId={build} ExecutionId={execution_id}"
    request = models.DescribeImagePipelineExecutionsRequest(region_id=build, execution_id=execution_id)
    ecs = client_for(build)
    answer = _answer(source, "ecs:DescribeImagePipelineExecutions",
                     lambda: ecs.describe_image_pipeline_executions(request))
    listed = answer.body.image_pipeline_execution
    found = [e for e in (listed.image_pipeline_execution_set if listed else None) or []
             if e.execution_id == execution_id]
    if len(found) != 1:
        raise SourceError(f"{source}: the execution is not listed (was its image template deleted?)")
    execution = found[0]
    if execution.status != "SUCCESS" or not execution.image_id:
        return ExecutionImages(execution_id, str(execution.status), {})
    name = _one_image(ecs, build, image_id=execution.image_id)
    if name is None:
        raise SourceError(f"{source}: its image {execution.image_id} is not listed in {build}")
    images = {build: execution.image_id}
    for region in copies:
        copied = _one_image(client_for(region), region, image_name=name, want_id=True)
        if copied is not None:
            images[region] = copied
    return ExecutionImages(execution_id, "SUCCESS", images)


def _one_image(ecs: Any, region: str, image_id: str | None = None, image_name: str | None = None,
               want_id: bool = False) -> str | None:
    """The name (or with `want_id` the id) of the one own image matching, None where there is none or several."""
    from alibabacloud_ecs20140526 import models

    request = models.DescribeImagesRequest(region_id=region, image_owner_alias="self", image_id=image_id,
                                           image_name=image_name, page_size=100)
    matched = f"ImageId={image_id}" if image_id else f"ImageName={image_name}"
    source = f"ecs:DescribeImages RegionId={region} {matched}"
    answer = _answer(source, "ecs:DescribeImages", lambda: ecs.describe_images(request))
    listed = answer.body.images.image if answer.body.images else []
    exact = [i for i in listed or [] if (image_id is None or i.image_id == image_id)
             and (image_name is None or i.image_name == image_name)]
    if len(exact) != 1:
        return None
    return exact[0].image_id if want_id else exact[0].image_name
