"""The demo's four runs, as an author would write their specs: a festival, a night market, a
parade and a duel."""

from __future__ import annotations

from typing import Any

FESTIVAL: dict[str, Any] = {
    "name": "Harvest festival",
    "phases": [
        {
            "id": "gather",
            "advance": "manual",
            "steps": [
                {
                    "id": "spawn-crows",
                    "action": "sandbox.spawn",
                    "params": {"kind": "crow", "count": 4},
                },
                {
                    "id": "open-arena",
                    "action": "sandbox.zone",
                    "params": {"name": "arena", "duration_s": 1},
                },
                {
                    "id": "fog-north",
                    "action": "core.lease",
                    "params": {
                        "lease": "sandbox.weather",
                        "target": "north",
                        "value": "fog",
                        "duration_s": 3600,
                    },
                },
            ],
        },
        {
            "id": "finale",
            "steps": [
                {
                    "id": "spawn-king",
                    "action": "sandbox.spawn",
                    "params": {"kind": "scarecrow-king", "count": 1},
                },
            ],
        },
    ],
}
MARKET: dict[str, Any] = {
    "name": "Night market",
    "phases": [
        {
            "id": "open",
            "steps": [
                {
                    "id": "spawn-stalls",
                    "action": "sandbox.spawn",
                    "params": {"kind": "stall", "count": 2},
                },
            ],
        }
    ],
}
PARADE: dict[str, Any] = {
    "name": "Parade",
    "phases": [
        {
            "id": "march",
            "advance": "manual",
            "steps": [
                {
                    "id": "spawn-floats",
                    "action": "sandbox.spawn",
                    "params": {"kind": "float", "count": 3},
                }
            ],
        }
    ],
}
DUEL: dict[str, Any] = {
    "name": "Duel at dusk",
    "phases": [
        {
            "id": "duel",
            "steps": [
                {
                    "id": "spawn-duellists",
                    "action": "sandbox.spawn",
                    "params": {"kind": "duellist", "count": 2},
                },
                {
                    "id": "ring",
                    "action": "sandbox.zone",
                    "params": {"name": "ring", "duration_s": 600},
                },
            ],
        }
    ],
}
