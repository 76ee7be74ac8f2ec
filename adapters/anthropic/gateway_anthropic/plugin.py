"""The anthropic adapter's plugin: the Anthropic client protocol and the ``anthropic`` channel type.

Settings (``plugins.toml``)::

    [plugins.anthropic]
    default_max_tokens = 4096   # max_tokens for requests from clients that leave it out
"""

from __future__ import annotations

from typing import Any

from gateway_core import hookimpl
from gateway_core.config import ConfigError

# The protocol and the channel type are imported inside the hooks: loading this
# entry point (every ``relaygate`` command does) costs only this module.


@hookimpl
def register_client_protocols(register, config) -> None:
    from .protocol import AnthropicProtocol

    register(AnthropicProtocol(limits=config.json_limits))


@hookimpl
def register_channel_types(register, config) -> None:
    from .channel import AnthropicChannel
    from .messages_request import DEFAULT_MAX_TOKENS

    settings = config.plugin_settings("anthropic")
    register(AnthropicChannel(default_max_tokens=_max_tokens(settings.get("default_max_tokens", DEFAULT_MAX_TOKENS))))


def _max_tokens(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"[plugins.anthropic] default_max_tokens must be a positive integer, not {value!r}")
    return value
