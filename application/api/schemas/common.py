from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Answer(BaseModel):
    """A response body. A value stored before values were checked may be a NaN or an infinity:
    it is written as null rather than break the answer."""

    model_config = ConfigDict(ser_json_inf_nan="null", from_attributes=True)


class Ask(BaseModel):
    """A request body: unknown fields are refused, so a misspelt field is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class Problem(Answer):
    """Why a request was refused, in one sentence."""

    detail: str


class Message(Answer):
    message: str
