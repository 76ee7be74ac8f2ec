"""Upstream keys sealed at rest: encrypted with a secret key the database does not hold.

With ``RELAYGATE_SECRET_KEY`` (or ``RELAYGATE_SECRET_KEY_FILE``, a file whose first
line is the key) set, or else the key file ``relaygate init`` creates beside the
database (``secret.key``, mode 0600), every upstream key a channel is given is stored sealed —
``rgsealed:v1:<key id>:<Fernet token>`` (AES-128-CBC and HMAC-SHA256, from the
``cryptography`` package) — in the same column on both stores, and opened when a
channel is read. Keys stored before (plain) are still read as they are, until
``relaygate rotate-secrets`` seals them. To rotate, set the new key as
``RELAYGATE_SECRET_KEY`` and the old one as ``RELAYGATE_SECRET_KEY_PREVIOUS`` (or
``…_PREVIOUS_FILE``) and run ``relaygate rotate-secrets``: keys sealed under the
old one are opened with it and sealed again under the new. The key id (the first
hex digits of a hash of the derived key) tells which secret sealed a key. Neither
the secret nor an upstream key is ever logged.

The secret may be any string: it is stretched with scrypt (a fixed salt: it is a
key, not a password stored anywhere) into the Fernet key, once per process.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from pathlib import Path
from collections.abc import Iterable
from typing import Any

SEALED = "rgsealed:v1:"
KEY_FILE = "secret.key"  # relaygate init's secret key, beside the database (default_key_file)
SECRET_ENV = "RELAYGATE_SECRET_KEY"
PREVIOUS_ENV = "RELAYGATE_SECRET_KEY_PREVIOUS"
_SALT = b"relaygate upstream keys at rest"
_default_file: Path | None = None  # use_key_file


class SealingError(ValueError):
    """A sealed key no configured secret opens, or a secret that cannot be read."""


def seal(key: str) -> str:
    """``key`` as stored: sealed under the current secret, or as it is when none is set."""
    secret = _secret(SECRET_ENV)
    if secret is None or key.startswith(SEALED):
        return key
    key_id, fernet = _fernet(secret)
    return f"{SEALED}{key_id}:{fernet.encrypt(key.encode('utf-8')).decode('ascii')}"


def unseal(stored: str) -> str:
    """A stored key in the clear: opened with the secret that sealed it (the
    current one or ``RELAYGATE_SECRET_KEY_PREVIOUS``); a plain one as it is."""
    if not isinstance(stored, str) or not stored.startswith(SEALED):
        return stored
    key_id, _, token = stored[len(SEALED) :].partition(":")
    for name in (SECRET_ENV, PREVIOUS_ENV):
        secret = _secret(name)
        if secret is not None:
            own_id, fernet = _fernet(secret)
            if own_id == key_id:
                return _decrypt(fernet, token)
    raise SealingError(
        f"an upstream key is sealed with a secret key (id {key_id}) that is neither {SECRET_ENV} nor {PREVIOUS_ENV}: "
        f"set the key it was sealed with (see docs/configuration.md)"
    )


def sealing_enabled() -> bool:
    return _secret(SECRET_ENV) is not None


def count_unsealed(stored_lists: Iterable[str | None]) -> int:
    """How many of the stored ``api_keys`` columns (JSON lists) hold a key in the clear."""
    import orjson

    return sum(1 for text in stored_lists if any(not key.startswith(SEALED) for key in orjson.loads(text or "[]")))


def use_key_file(path: Path | None) -> None:
    """The secret-key file to use when neither ``RELAYGATE_SECRET_KEY`` nor its
    ``_FILE`` is set (:func:`default_key_file`, which ``relaygate init`` creates):
    the command line and the gateway name it for their database at start-up."""
    global _default_file
    _default_file = path


def default_key_file(db: str) -> Path:
    """Where ``relaygate init`` keeps the secret key of the database ``db``: beside a
    SQLite file, in the data folder (``RELAYGATE_HOME``) for a server's URL
    (``postgresql://…`` or any other store kind's scheme)."""
    from ..config import data_home
    from ..stores import scheme_of

    scheme = scheme_of(db)
    if scheme is not None and scheme != "sqlite":
        return data_home() / KEY_FILE
    return Path(db.removeprefix("sqlite:///")).absolute().parent / KEY_FILE


def create_key_file(path: Path) -> bool:
    """Create ``path`` with a new random secret key, readable by its owner only
    (mode 0600); ``False`` when it exists already (never overwritten)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(base64.urlsafe_b64encode(os.urandom(32)).decode("ascii") + "\n")
    return True


def _decrypt(fernet: Any, token: str) -> str:
    from cryptography.fernet import InvalidToken

    try:
        return str(fernet.decrypt(token.encode("ascii")).decode("utf-8"))
    except (InvalidToken, ValueError):
        raise SealingError("an upstream key's sealed form is damaged: it cannot be opened (set the key again)") from None


def _secret(name: str) -> str | None:
    """The secret in ``name``, else in the file ``name_FILE`` names (its first line),
    else (the current secret only) in the default key file when it exists."""
    value = os.environ.get(name)
    if value:
        return value
    path = os.environ.get(name + "_FILE")
    if not path:
        if name != SECRET_ENV or _default_file is None or not _default_file.exists():
            return None
        path = str(_default_file)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SealingError(f"{name}_FILE: cannot read {path}: {exc.strerror}") from None
    if not lines or not lines[0].strip():
        raise SealingError(f"{name}_FILE: {path} is empty")
    return lines[0].strip()


@functools.lru_cache(maxsize=4)
def _fernet(secret: str) -> tuple[str, Any]:
    from cryptography.fernet import Fernet

    derived = hashlib.scrypt(secret.encode("utf-8"), salt=_SALT, n=2**14, r=8, p=1, dklen=32)
    key_id = hashlib.sha256(b"key id\x00" + derived).hexdigest()[:12]
    return key_id, Fernet(base64.urlsafe_b64encode(derived))
