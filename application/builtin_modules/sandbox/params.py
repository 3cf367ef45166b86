"""What a definition's dry run, and so every start, checks the sandbox's step params against."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SpawnParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field("creature", min_length=1, max_length=64)
    count: int = Field(1, ge=1, le=1_000)


class ZoneParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field("zone", min_length=1, max_length=120)
    duration_s: float = Field(60, gt=0)
