from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class LeaseParams(BaseModel):
    """What a core.lease step asks for: a value put on a lease's target for a while."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lease: str = Field(min_length=1)
    target: str = Field(min_length=1, max_length=120)
    value: Any
    duration_s: float = Field(gt=0)
