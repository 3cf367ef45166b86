"""Who a request came from and how, believing forwarding headers only from a trusted proxy
(RUNLEDGER_TRUSTED_PROXIES): anyone else could write them to pose as another address."""

from __future__ import annotations

from functools import lru_cache
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from runledger.application.deps import SettingsDep

MAX_ADDRESS = 64
"""An address longer than any IP (with a zone) is cut: it is a key the brake keeps."""

Networks = tuple[IPv4Network | IPv6Network, ...]


@lru_cache(maxsize=8)
def networks(trusted: tuple[str, ...]) -> Networks:
    """The settings' addresses and networks (already checked by Settings)."""
    return tuple(ip_network(entry, strict=False) for entry in trusted)


def trusts(trusted: tuple[str, ...], host: str) -> bool:
    try:
        address = ip_address(host.strip().strip("[]"))
    except ValueError:
        return False
    return any(address in network for network in networks(trusted))


def client_address(request: HTTPConnection, trusted: tuple[str, ...]) -> str:
    """The peer's address; through a trusted proxy, the nearest hop of X-Forwarded-For that is
    not itself a trusted proxy. Hops are read from the right: the left is whatever the client
    wrote, and a guesser could name a new address with every try."""
    peer = request.client.host if request.client is not None else ""
    if not trusts(trusted, peer):
        return peer[:MAX_ADDRESS]
    hops = [h.strip() for v in request.headers.getlist("x-forwarded-for") for h in v.split(",")]
    hops = [hop for hop in hops if hop]
    for hop in reversed(hops):
        if not trusts(trusted, hop):
            return hop[:MAX_ADDRESS]
    return (hops[0] if hops else peer)[:MAX_ADDRESS]


def over_https(request: HTTPConnection, trusted: tuple[str, ...]) -> bool:
    """Whether the browser spoke https: to us directly, or to a trusted proxy that says so."""
    if request.url.scheme in ("https", "wss"):
        return True
    peer = request.client.host if request.client is not None else ""
    said = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return said == "https" and trusts(trusted, peer)


async def _address(request: Request, settings: SettingsDep) -> str:
    return client_address(request, settings.trusted_proxies)


ClientAddress = Annotated[str, Depends(_address)]
"""The client's address as client_address finds it, for either HTTP front end."""
