"""The Redis world as the module sees it: keys as creatures, a key with a TTL as a zone whose
deadline Redis itself enforces, and leases over string keys, each call one Lua script."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from runledger.application.builtin_modules.redis import lua

# What the module keeps about keys (what each made, which are ended, what each applied) lives a
# week: far past any run's retries and sweeps, which take minutes, yet it does not pile up for
# ever. A perform arriving a week after its key was given back would make its things again.
BOOKKEEPING_TTL_S = 7 * 24 * 3600
BOOKKEEPING = ("made:", "fence:", "applied:")


def given_back(key: str, what: str) -> dict[str, Any]:
    """The answer under a key a revert or a restore has ended."""
    error = f"{key} was given back; nothing is {what} under it"
    return {"ok": False, "retry": False, "error": error}


def _arg(value: Any) -> list[str]:
    """An optional value as two script arguments: whether there is one, and its text."""
    return ["", ""] if value is None else ["1", str(value)]


class RedisWorld:
    def __init__(self, client: redis.Redis, prefix: str) -> None:
        # The client decodes answers: every key and value here is text.
        self.client = client
        self.prefix = prefix
        self._spawn = client.register_script(lua.SPAWN)
        self._zone = client.register_script(lua.ZONE)
        self._revert = client.register_script(lua.REVERT)
        self._apply = client.register_script(lua.APPLY)
        self._restore = client.register_script(lua.RESTORE)

    def _made(self, key: str) -> str:
        return f"{self.prefix}made:{key}"

    def _fence(self, key: str) -> str:
        return f"{self.prefix}fence:{key}"

    def _applied(self, key: str) -> str:
        return f"{self.prefix}applied:{key}"

    def is_bookkeeping(self, name: str) -> bool:
        """Whether ``name`` is the module's own record of a key, not a thing in the world."""
        return name.startswith(tuple(self.prefix + part for part in BOOKKEEPING))

    def fenced(self, key: str) -> bool:
        """Whether a revert or a restore has ended ``key``."""
        return bool(self.client.exists(self._fence(key)))

    def applied_under(self, key: str) -> dict[str, Any] | None:
        """What the first apply under ``key`` recorded: ``{target, baseline, applied}``."""
        found = self.client.hgetall(self._applied(key))
        if not found:
            return None
        baseline = found["baseline"] if found["had"] == "1" else None
        return {"target": found["target"], "baseline": baseline, "applied": found["applied"]}

    def spawn(self, params: dict[str, Any], key: str) -> Any:
        kind = str(params.get("kind", "creature"))
        tag = hashlib.sha1(key.encode()).hexdigest()[:8]
        names = [f"{self.prefix}{kind}:{tag}:{i}" for i in range(int(params.get("count", 1)))]
        made = self._spawn(
            keys=[self._fence(key), self._made(key), *names], args=[key, BOOKKEEPING_TTL_S]
        )
        if made == 0:
            return given_back(key, "made")
        return {"ok": True, "resources": [{"kind": kind, "ref": n} for n in names]}

    def open_zone(self, params: dict[str, Any], key: str) -> Any:
        name = f"{self.prefix}zone:{params.get('name', 'zone')}"
        duration_ms = int(float(params.get("duration_s", 60)) * 1000)
        ttl_ms = int(
            self._zone(keys=[self._fence(key), self._made(key), name], args=[key, duration_ms])
        )
        if ttl_ms < 0:
            return given_back(key, "made")
        until = datetime.now(UTC) + timedelta(milliseconds=ttl_ms)
        return {
            "ok": True,
            "resources": [{"kind": "zone", "ref": name, "until": until.isoformat()}],
        }

    def revert(self, resources: list[dict[str, Any]], key: str) -> Any:
        names = [r["ref"] for r in resources]
        self._revert(keys=[self._fence(key), self._made(key), *names], args=[BOOKKEEPING_TTL_S])
        return {"ok": True}

    def in_force(self, resources: list[dict[str, Any]]) -> Any:
        pipe = self.client.pipeline()
        for r in resources:
            pipe.exists(r["ref"])
        present = pipe.execute()
        return {
            "ok": True,
            "in_force": [r["ref"] for r, n in zip(resources, present, strict=True) if n],
        }

    def apply(self, target: str, value: Any, key: str) -> Any:
        answer = self._apply(
            keys=[target, self._applied(key), self._fence(key)],
            args=[str(value), BOOKKEEPING_TTL_S],
        )
        if answer[0] == 0:
            return given_back(key, "applied")
        _, had, baseline, applied = answer
        return {"ok": True, "baseline": baseline if had == "1" else None, "applied": applied}

    def restore(self, baseline: Any, expected: Any, target: str, key: str) -> Any:
        answer = self._restore(
            keys=[target, self._applied(key), self._fence(key)],
            args=[*_arg(expected), *_arg(baseline), BOOKKEEPING_TTL_S],
        )
        if answer[0] == 1:
            return {"ok": True}
        return {"drifted": True, "current": answer[1] if len(answer) > 1 else None}
