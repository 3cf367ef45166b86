"""A spec coming in is what the document says: a number of seconds is a number, never true,
false or text that reads as one. A spec read back from the store reads as it always did."""

from __future__ import annotations

from typing import Any

import pytest

from runledger.application.errors import BadRequest
from runledger.application.services.spec_input import parse_spec
from runledger.domain.spec import RunSpec


def waiting(after_s: Any) -> dict[str, Any]:
    step = {"id": "s", "action": "fair.stall"}
    return {"name": "fair", "phases": [{"id": "p", "steps": [step], "after_s": after_s}]}


@pytest.mark.parametrize("value", [False, True, "5", "0", None, [1], {"s": 1}])
def test_a_wait_that_is_not_a_number_is_refused_naming_the_field(value: Any) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_spec(waiting(value))
    assert str(refused.value) == "phases.0.after_s: must be a number"


@pytest.mark.parametrize("value", [0, 5, 2.5, 86_400])
def test_a_wait_in_seconds_is_read_as_given(value: float) -> None:
    assert parse_spec(waiting(value)).phases[0].after_s == value


def test_a_wait_as_json_text_is_refused_the_same_way() -> None:
    with pytest.raises(BadRequest, match=r"^phases\.0\.after_s: must be a number$"):
        parse_spec(
            '{"name": "fair", "phases": [{"id": "p", "after_s": false, '
            '"steps": [{"id": "s", "action": "fair.stall"}]}]}'
        )


def test_a_stored_spec_whose_wait_was_read_leniently_still_reads() -> None:
    """A run stored before this rule may hold false: it must load, as it ran."""
    assert RunSpec.stored(waiting(False)).phases[0].after_s == 0
    assert RunSpec.stored(waiting("5")).phases[0].after_s == 5


@pytest.mark.parametrize("value", [1e20, -7.596409130920365e129, float(2**63)])
def test_a_whole_number_past_64_bits_is_refused_however_it_is_written(value: float) -> None:
    """The long fuzz sent 7.596409130920365e+129 in params: a whole number past the document's
    64 bits (JSON Schema reads 1e20 as an integer), which the parser took as a float."""
    spec = waiting(0)
    spec["phases"][0]["steps"][0]["params"] = {"x": value}
    with pytest.raises(BadRequest, match=r"^phases\.0\.steps\.0\.params\.x: an integer beyond"):
        parse_spec(spec)


@pytest.mark.parametrize("value", [1e15, -0.5, 9.2e18, -2.2250738585e-313])
def test_a_number_within_64_bits_is_taken(value: float) -> None:
    """Every float past 2**53 is whole: a fraction is always within 64 bits."""
    spec = waiting(0)
    spec["phases"][0]["steps"][0]["params"] = {"x": value}
    assert parse_spec(spec).phases[0].steps[0].params == {"x": value}
