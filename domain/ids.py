from __future__ import annotations

from uuid import UUID, uuid5

NAMESPACE = UUID("6f1d3c52-6a86-4f59-9d0e-2b8f3c7a9e41")


def natural_id(*parts: object) -> UUID:
    """A deterministic id for a natural key, so a duplicate create collides."""
    return uuid5(NAMESPACE, "\x1f".join(str(p) for p in parts))
