"""Where a webhook may go: never to an address only runledger's hosts reach (a metadata service,
a local admin page, the internal network) unless RUNLEDGER_WEBHOOK_ALLOW_NETWORKS allows it.

A URL is checked when it is subscribed and again at every delivery, on the addresses its host
resolves to then: the connection is made to an address that was checked, never by resolving the
name a second time, so a name that changes its answer (DNS rebinding) gains nothing."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from urllib.parse import urlsplit

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network
Resolve = Callable[[str, int], list[str]]
"""A host and port to the addresses it resolves to, as text; OSError when it resolves to none."""

SETTING = "RUNLEDGER_WEBHOOK_ALLOW_NETWORKS"
CARRIER_NAT = IPv4Network("100.64.0.0/10")


class Refused(OSError):
    """The destination is not one runledger sends to. An OSError, so urllib reports it as it
    reports a refused connection."""


def system_resolve(host: str, port: int) -> list[str]:
    """The operating system's answer, numeric forms (``0x7f000001``, ``2130706433``) included."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def kind(address: Address) -> str | None:
    """What makes ``address`` one runledger does not send to by default, or None when public."""
    if isinstance(address, IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is not None:
            return kind(inner)
    checks = (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("carrier-grade NAT", address in CARRIER_NAT),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("non-public", not address.is_global),
    )
    return next((name for name, hit in checks if hit), None)


def _unwrapped(address: Address) -> Address:
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _literal(host: str) -> str | None:
    """``host`` when it is an IP address as written in a URL (an IPv6 zone dropped): checked as
    it stands, whatever a resolver would make of it."""
    bare = host.split("%", 1)[0]
    try:
        ip_address(bare)
    except ValueError:
        return None
    return bare


@dataclass(frozen=True)
class Destinations:
    """The rule with what it needs: the networks an operator allows, and how names resolve."""

    allowed: tuple[Network, ...] = ()
    resolve: Resolve = field(default=system_resolve)

    def problem(self, address: Address) -> str | None:
        """What ``address`` is when runledger may not send to it ("a loopback address"), or
        None."""
        if any(_unwrapped(address) in net or address in net for net in self.allowed):
            return None
        found = kind(address)
        if found is None:
            return None
        return f"{'an' if found[0] in 'aeiou' else 'a'} {found} address"

    def checked(self, host: str, port: int) -> list[Address]:
        """Every address ``host`` resolves to, each allowed; Refused naming the first that is
        not (one bad address refuses them all: which one a connection meets is not ours)."""
        literal = _literal(host)
        given = [literal] if literal is not None else self.resolve(host, port)
        addresses = [ip_address(a.split("%", 1)[0]) for a in given]
        if not addresses:
            raise Refused(f"{host} resolves to no address")
        for address in addresses:
            problem = self.problem(address)
            if problem is not None:
                said = f"{literal} is" if literal else f"{host} resolves to {address},"
                raise Refused(
                    f"{said} {problem}: webhooks go only to public addresses, "
                    f"unless {SETTING} allows the network"
                )
        return addresses

    def url_problem(self, url: str) -> str | None:
        """Why ``url``'s host is refused now, or None. A name that does not resolve yet is not
        refused here: every delivery checks it again."""
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            self.checked(parts.hostname or "", port)
        except Refused as refused:
            return f"is refused: {refused}"
        except OSError:
            return None
        return None

    def connect(
        self, to: tuple[str, int], timeout: float | None = None, *_: object
    ) -> socket.socket:
        """A connection to a checked address of ``to``'s host: what http.client calls to open
        its socket (TLS then names the host itself, so SNI and the certificate check hold)."""
        host, port = to
        last: OSError = Refused(f"{host} resolves to no address")
        for address in self.checked(host, port):
            try:
                return socket.create_connection((str(address), port), timeout)
            except OSError as error:
                last = error
        raise last
