"""A read's answer as it leaves: its model, checked as it was made, written to JSON in the
route's own thread.

A sync route that returns a model has FastAPI check it again against the response model, in a
thread-pool call of its own, before writing it: for a page of 50 runs that was a second check of
every row and a third hop between threads per request (scripts/MEASUREMENTS.md, "Reads at
100,000 runs, third pass"). The route keeps its `response_model`, which the OpenAPI document
shows; it returns exactly that model, so nothing is left for FastAPI to filter."""

from __future__ import annotations

from fastapi import Response
from pydantic import BaseModel


class Answered(Response):
    media_type = "application/json"

    def __init__(self, answer: BaseModel) -> None:
        super().__init__(answer.model_dump_json(by_alias=True))
