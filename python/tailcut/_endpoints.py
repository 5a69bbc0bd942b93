"""Scheduler endpoints: the rule of wire/src/wire.cpp (ValidateEndpoint,
SplitEndpoints), and the list of a scheduler's replicas that a Client
follows (docs/RELIABILITY.md, "Replicas")."""

import zmq

from .errors import InvalidArgument


def check_endpoint(ep):
    """Raises InvalidArgument unless `ep` is tcp://HOST:PORT, ipc://PATH or
    inproc://NAME (the rule of wire/src/wire.cpp)."""

    def bad(why):
        return InvalidArgument(f"endpoint {ep!r}: {why} (expected tcp://HOST:PORT, ipc://PATH or inproc://NAME)")

    if not isinstance(ep, str):
        raise bad("not a string")
    for transport in ("ipc://", "inproc://"):
        if ep.startswith(transport):
            if len(ep) == len(transport):
                raise bad("empty path")
            return
    if not ep.startswith("tcp://"):
        raise bad("unknown transport")
    host, _, port = ep[len("tcp://") :].rpartition(":")
    if not host:
        raise bad("missing host or port")
    if port == "*":
        return
    if not port.isdigit() or len(port) > 5:
        raise bad("bad port")
    if int(port) > 65535:
        raise bad("port above 65535")


def split_endpoints(text):
    """The endpoints of a comma-separated list ("tcp://a:7701,tcp://b:7701",
    one scheduler's replicas), each checked; spaces around each dropped."""
    if not isinstance(text, str):
        raise InvalidArgument(f"endpoint {text!r}: not a string")
    out = [one.strip(" ") for one in text.split(",")]
    if "" in out:
        raise InvalidArgument(f"endpoints {text!r}: an empty entry")
    for ep in out:
        check_endpoint(ep)
    return out


class Endpoints:
    """A scheduler's replicas as a Client sees them: the one it talks to,
    where a NOT_LEADER answer sends it, and the next to try when the one it
    talks to is silent (as the C++ client)."""

    def __init__(self, text):
        self.all = split_endpoints(text)
        self.current = 0

    @property
    def now(self):
        return self.all[self.current]

    def leader(self, endpoint):
        """The index of the leader a NOT_LEADER names, or None when this
        list does not hold it ("": none known yet)."""
        return self.all.index(endpoint) if endpoint in self.all else None

    def move(self, sock, index):
        """Connects `sock` to endpoint `index` instead of the current one:
        one connection at a time, or a DEALER would spread requests."""
        try:
            sock.disconnect(self.now)
        except zmq.ZMQError:  # not connected: nothing to undo
            pass
        self.current = index
        sock.connect(self.now)

    def after(self):
        return (self.current + 1) % len(self.all)
