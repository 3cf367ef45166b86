"""A data value made safe to show: the rule every screen (terminal and web) applies."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from runledger.application.display import MAX_CHARS, json_text, safe_repr, safe_text
from runledger.domain.text import _escaped

RED = "\x1b[31m"
ALERT = "[bold red]ALERT[/bold red]"
SCRIPT = "<script>alert(1)</script>"
CLOSE = "[/] oops"


def test_safe_text_shows_every_control_character_as_a_visible_escape() -> None:
    assert safe_text(f"a{RED}b\r\n\t\x00\x07\x7f\x9b") == "a\\x1b[31mb\\r\\n\\t\\x00\\x07\\x7f\\x9b"
    assert safe_text("lone \ud800 and \u202egnp.exe") == "lone \\ud800 and \\u202egnp.exe"
    assert safe_text("lone \ud800").encode("utf-8")  # a terminal can encode what it is given


def test_safe_text_leaves_markup_html_and_ordinary_unicode_as_typed() -> None:
    for value in (ALERT, CLOSE, SCRIPT, "crème brûlée ☂ 雨", ":smile:", "C:\\path"):
        assert safe_text(value) == value


ANY_CHARACTER = st.one_of(
    st.characters(exclude_categories=()),
    st.characters(categories=["Cc", "Cs", "Zl", "Zp"]),
    st.sampled_from("\u202e\u2066\u200f\x1b\x7f\x9b\n"),
)


@given(
    st.one_of(st.text(alphabet=ANY_CHARACTER), st.text(alphabet=st.characters(codec="utf-8"))),
    st.integers(min_value=0, max_value=8),
)
def test_printable_text_shown_as_it_is_is_what_escaping_each_character_would_show(
    text: str, limit: int
) -> None:
    assert safe_text(text, limit) == _escaped(text, limit)


def test_safe_text_cuts_a_long_value_with_an_ellipsis_that_says_how_much() -> None:
    assert safe_text("x" * (MAX_CHARS + 5)) == "x" * MAX_CHARS + "… (5 more characters)"
    assert safe_text("x" * 1_000_000, 10) == "x" * 10 + "… (999,990 more characters)"
    escaped = safe_text("\x1b" * 100, 12)
    assert escaped == "\\x1b" * 3 + "… (97 more characters)"
    assert safe_text("x" * MAX_CHARS) == "x" * MAX_CHARS


def test_a_value_that_cannot_describe_itself_is_still_shown() -> None:
    class Rude:
        def __str__(self) -> str:
            raise RuntimeError("no")

        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert safe_text(Rude()) == safe_repr(Rude()) == "<unprintable Rude>"
    assert safe_text(3.5) == "3.5" and safe_repr(RED) == "'\\x1b[31m'"


def test_json_text_is_valid_json_for_nan_infinity_and_what_json_has_no_word_for() -> None:
    found = json.loads(
        json_text(
            {"n": float("nan"), "i": [float("inf"), -float("inf")], 1: {2}, "o": object(), "s": RED}
        )
    )
    assert found["n"] is None and found["i"] == [None, None] and found["1"] == [2]
    assert found["o"].startswith("<object object") and found["s"] == RED
    assert "NaN" not in json_text(float("nan")) and "Infinity" not in json_text(float("inf"))


def test_json_text_never_raises_on_deep_or_rude_containers() -> None:
    deep: list[object] = []
    for _ in range(10_000):
        deep = [deep]

    class Rude(dict[str, int]):
        def items(self) -> object:  # type: ignore[override]
            raise RuntimeError("no")

    assert json.loads(json_text(deep)) is not None
    assert json.loads(json_text({"r": Rude(a=1)})) == {"r": "{'a': 1}"}
