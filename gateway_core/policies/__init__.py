"""The built-in policies, in pipeline order."""

from __future__ import annotations

from ..config import Config
from ..policy import Policy
from .authentication import Authentication
from .key_state import KeyState


def builtin_policies(config: Config) -> list[Policy]:
    return [Authentication(), KeyState()]
