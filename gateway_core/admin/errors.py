"""What an admin operation raises when it cannot do what was asked.

Every front maps these the same way: the CLI to exit status 1 (``NotFound``,
``Conflict``, ``StoreFailure``, ``Forbidden``) or 2 (``Invalid``), the console to a 404
page or the form again with the message, the JSON API to 404, 409, 400, 403 or 503.
"""

from __future__ import annotations


class AdminError(Exception):
    """An admin operation's failure, said in one sentence for people."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotFound(AdminError, LookupError):
    """The user, key, channel, price, group or log row does not exist (or is not the caller's)."""


class Conflict(AdminError):
    """The change clashes with what is stored: a name taken, a state that forbids it."""


class Invalid(AdminError, ValueError):
    """A value the operation cannot use (a negative quota, an unknown channel type).

    ``field`` names the value when one is to blame (``"base_url"``); ``detail``
    then reads after it (``"must be a URL like https://api.example.com"``), so
    each front names the field its own way (the CLI as ``--base-url``).
    """

    def __init__(self, detail: str, field: str | None = None) -> None:
        super().__init__(f"{field.replace('_', ' ')} {detail}" if field else detail)
        self.field = field
        self.detail = detail


class StoreFailure(AdminError):
    """The database failed (unreachable, locked for too long, full)."""


class Forbidden(AdminError):
    """The caller may see the thing but their role does not allow the operation
    (a team's viewer creating a key, a member adding a member: ``docs/teams.md``)."""


class Locked(Invalid):
    """A key's owner tried to loosen a limit the gateway's operator set on it."""

