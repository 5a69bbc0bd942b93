"""What a ZeroMQ peer says in its greeting, read without ZeroMQ (ZMTP 3.0)."""
import socket


def greeting_mechanism(endpoint, timeout=1.0):
    """The security mechanism the ZeroMQ peer at `endpoint` (tcp:// or
    ipc://) names in its greeting (b"CURVE", b"NULL"), or None when it does
    not say within `timeout`. We send only the greeting's signature and
    major version (ZMTP 3.0: 10 + 1 bytes); the peer answers with the rest
    of its own greeting (minor version, then the 20-byte mechanism) before
    it sees ours, so a keyed scheduler names CURVE even where it closes a
    keyless ZeroMQ connection too soon for the greeting to be read."""
    try:
        if endpoint.startswith("tcp://"):
            host, _, port = endpoint[len("tcp://"):].rpartition(":")
            sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        elif endpoint.startswith("ipc://"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(endpoint[len("ipc://"):])
        else:
            return None
        with sock:
            sock.sendall(b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03")
            got = b""
            while len(got) < 32:
                more = sock.recv(64 - len(got))
                if not more:
                    return None
                got += more
            return got[12:32].rstrip(b"\0") if got[10] >= 3 else None
    except (OSError, ValueError, IndexError):
        return None
