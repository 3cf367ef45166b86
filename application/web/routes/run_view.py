"""What a run's page shows of it: its live parts (status, phases, entries by state, log tail)
and a fingerprint of them."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any
from uuid import UUID

from runledger.application.plain import value_said
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import LogLine
from runledger.application.services.tokens import Actor
from runledger.application.web.routes.acts import LABELS, offered
from runledger.application.web.words import state_order
from runledger.application.words import detail_key
from runledger.domain.fate import UNRESOLVED
from runledger.domain.text import safe_text

TAIL = 200
"""How many of the run's last log lines its page shows; its log page pages back from there."""
FOLDED = 25
"""A settled group (given back, expired, kept …) with more entries than this starts folded."""


def live(answers: Answers, run_id: UUID, actor: Actor) -> dict[str, Any]:
    """What the run's live parts show, and a fingerprint of it: a poll that has seen the same
    is answered 204, so the page changes (and a folded group stays as it was) only on news."""
    detail = answers.run_detail(run_id)
    log = answers.log_page(run_id, TAIL, None)
    seen = hashlib.sha256(
        f"{actor.role}|{detail.model_dump_json()}|{log.model_dump_json()}".encode()
    ).hexdigest()[:20]
    kept = Counter(e.kept_by for g in detail.entries for e in g.entries if e.kept_by)
    return {
        "run": detail.run,
        "kept_by": dict(kept),
        "phases": detail.phases,
        "groups": sorted(detail.entries, key=lambda g: state_order(g.state)),
        "log": log,
        "lines": [(line, pairs(line)) for line in log.lines],
        "seen": seen,
        "offered": offered(detail.run),
        "LABELS": LABELS,
        "UNRESOLVED": UNRESOLVED,
        "FOLDED": FOLDED,
    }


def pairs(line: LogLine) -> list[tuple[str, str]]:
    """A log line's detail as (key, value) in words; lists joined, every value made safe."""
    return [
        (
            safe_text(detail_key(key), 80),
            ", ".join(safe_text(value_said(v), 300) for v in value)
            if isinstance(value, list)
            else safe_text(value_said(value), 600),
        )
        for key, value in line.detail.items()
    ]
