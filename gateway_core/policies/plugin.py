"""The built-in policies as a plugin: registered through the same hook as any other."""

from __future__ import annotations

from ..config import Config
from ..hookspecs import RegisterPolicy, hookimpl


@hookimpl
def register_policies(register: RegisterPolicy, config: Config) -> None:
    """Authentication 100, key state 200, IP allow list 300, model access 400,
    quota and balance 500, rate limits 600."""
    from .authentication import Authentication
    from .ip_allow import IPAllowList
    from .key_state import KeyState
    from .model_access import ModelAccess
    from .quota import Quota
    from .rate_limit import RateLimit

    for policy in (Authentication(), KeyState(), IPAllowList(), ModelAccess(hide=config.hide_forbidden_models), Quota(config.default_max_output_tokens), RateLimit()):
        register(policy)
