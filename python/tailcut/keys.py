"""CURVE key files, the same format `tailcut keygen` writes and the daemons
read (wire/src/security.cpp, docs/SECURITY.md): TOML with [[key]] entries
holding `name`, `role`, `public` and, in a .key file only, `secret`, both
40-character Z85 strings."""

import tomllib
from dataclasses import dataclass

import zmq.utils.z85

from .errors import InvalidArgument


@dataclass(frozen=True)
class KeyPair:
    name: str
    role: str
    public: str
    secret: str


def is_z85_key(text):
    if not isinstance(text, str) or len(text) != 40:
        return False
    try:
        return len(zmq.utils.z85.decode(text.encode("ascii"))) == 32
    except (ValueError, KeyError, UnicodeEncodeError):
        return False


def _entries(path):
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise InvalidArgument(f"cannot read key file {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise InvalidArgument(f"{path}: not a TOML key file: {e}") from None
    entries = doc.get("key")
    if not isinstance(entries, list):
        raise InvalidArgument(f"{path}: no [[key]] entry (make one with `tailcut keygen NAME`)")
    return entries


def load_key_pair(path):
    """This client's key pair from a .key file (exactly one [[key]] with
    `secret`)."""
    entries = _entries(path)
    if len(entries) != 1:
        raise InvalidArgument(f"{path}: a key file holds exactly one [[key]]")
    e = entries[0]
    if not is_z85_key(e.get("public")):
        raise InvalidArgument(f"{path}: public must be a 40-character Z85 key")
    if not is_z85_key(e.get("secret")):
        raise InvalidArgument(f"{path}: secret must be a 40-character Z85 key (is this the .pub file? use the .key)")
    return KeyPair(str(e.get("name", "")), str(e.get("role", "client")), e["public"], e["secret"])


def load_public_key(path_or_z85):
    """The scheduler's public key: a Z85 string, or a .pub (or .key) file
    whose first [[key]] has `public`."""
    if is_z85_key(path_or_z85):
        return path_or_z85
    entries = _entries(path_or_z85)
    pub = entries[0].get("public") if entries and isinstance(entries[0], dict) else None
    if not is_z85_key(pub):
        raise InvalidArgument(f"{path_or_z85}: no [[key]] with a 40-character Z85 public key")
    return pub
