"""How a webhook is signed, and how a receiver checks it (OPERATING.md shows the same check):
HMAC-SHA256 of "<unix time>.<body>" under the subscription's secret."""

from __future__ import annotations

import hashlib
import hmac
import time


def signature(secret: str, body: bytes, at: int) -> str:
    """The ``Runledger-Signature`` header's value for ``body`` sent at unix time ``at``."""
    mac = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256)
    return f"t={at},v1={mac.hexdigest()}"


def verify(secret: str, body: bytes, header: str, tolerance_s: int = 300) -> bool:
    """Whether ``header`` signs ``body`` under ``secret``, sent within ``tolerance_s`` of now."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        at = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(time.time() - at) > tolerance_s:
        return False
    expected = signature(secret, body, at).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))
