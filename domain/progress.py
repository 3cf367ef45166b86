from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from runledger.domain.run import Run
from runledger.domain.spec import PhaseSpec, RunSpec
from runledger.domain.step import Step


@dataclass(frozen=True)
class PhaseStatus:
    """Where one phase stands, in the words the console shows (the reference's W2)."""

    phase: str
    headline: str
    why_not_advanced: str | None = None


def ready_at(phase: PhaseSpec, steps: list[Step]) -> datetime | None:
    """When an automatic phase may advance: its steps are done and its wait has passed."""
    done = [s.done_at for s in steps if s.done_at is not None]
    if phase.advance == "manual" or len(done) < len(phase.steps):
        return None
    return max(done) + timedelta(seconds=phase.after_s)


def describe(spec: RunSpec, run: Run, steps: dict[str, Step], now: datetime) -> list[PhaseStatus]:
    found = []
    for index, phase in enumerate(spec.phases):
        if index < run.phase or run.status == "completed":
            found.append(PhaseStatus(phase.id, f"Phase {phase.id}: done"))
        elif index > run.phase:
            before = spec.phases[index - 1].id
            found.append(PhaseStatus(phase.id, f"Phase {phase.id}: not started (after {before})"))
        else:
            mine = [steps[s.id] for s in phase.steps if s.id in steps]
            found.append(_current(phase, mine, run, now))
    return found


def _current(phase: PhaseSpec, steps: list[Step], run: Run, now: datetime) -> PhaseStatus:
    name = f"Phase {phase.id}"
    failed = next((s for s in steps if s.gave_up), None)
    if failed is not None:
        headline = (
            f"{name}: step {failed.step_id} failed {times(failed.attempts)}: {failed.last_error}"
        )
        return PhaseStatus(phase.id, headline, f"step {failed.step_id} cannot succeed")
    if run.is_terminal:
        return PhaseStatus(phase.id, f"{name}: the run ended here ({run.status})")
    waiting = [s for s in steps if s.state != "done"]
    if waiting:
        return PhaseStatus(phase.id, f"{name}: running steps", _why_steps(waiting, now))
    if phase.advance == "manual":
        why = "its advance rule is manual: a person must advance it"
        return PhaseStatus(phase.id, f"{name}: steps done, waiting for a person to advance it", why)
    when = ready_at(phase, steps)
    if when is not None and when > now:
        return PhaseStatus(
            phase.id,
            f"{name}: steps done, waiting until {when:%H:%M:%S} UTC",
            f"it advances {phase.after_s:g}s after its last step finished",
        )
    return PhaseStatus(
        phase.id, f"{name}: steps done, waiting to advance", "the runner's next tick advances it"
    )


def _why_steps(waiting: list[Step], now: datetime) -> str:
    reasons = []
    for step in waiting:
        if step.under_live_claim(now):
            reasons.append(f"step {step.step_id} is being dispatched (attempt {step.attempts})")
        elif step.last_error:
            when = (
                f"next attempt at {step.next_attempt_at:%H:%M:%S} UTC"
                if step.next_attempt_at is not None and step.next_attempt_at > now
                else "it will be retried"
            )
            reasons.append(
                f"step {step.step_id} failed {times(step.attempts)}: {step.last_error}; {when}"
            )
        else:
            reasons.append(f"step {step.step_id} waits for the runner to dispatch it")
    return "; ".join(reasons)


def times(count: int) -> str:
    return f"{count} time" if count == 1 else f"{count} times"
