"""The built-in policies as a plugin: registered through the same hook as any other."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config
from ..hookspecs import hookimpl
from ..policy import Policy
from . import builtin_policies


@hookimpl
def register_policies(register: Callable[[Policy], None], config: Config) -> None:
    for policy in builtin_policies(config):
        register(policy)
