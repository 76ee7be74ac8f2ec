"""The openai adapter's plugin: the OpenAI client protocol, the ``openai`` channel
type and the ``rerank`` channel type (Cohere/Jina-style rerankers).

Settings (``plugins.toml``)::

    [plugins.openai]
    max_upload_bytes = 52428800   # the largest upload (images/edits, audio/transcriptions and translations); 413 beyond it

    [plugins.openai.stored_responses]   # Responses answers kept for groups that opt in (see responses_kept)
    groups = ["team-a"]
"""

from __future__ import annotations

from typing import Any

from gateway_core import hookimpl
from gateway_core.config import ConfigError

# The protocol and the channel types are imported inside the hooks: loading this
# entry point (every ``relaygate`` command does) costs only this module.


@hookimpl
def register_client_protocols(register, config) -> None:
    from .protocol import DEFAULT_MAX_UPLOAD_BYTES, OpenAIProtocol
    from .responses_kept import KeptResponses

    settings = config.plugin_settings("openai")
    max_upload_bytes = _positive(settings.get("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES))
    kept = KeptResponses.from_settings(settings)
    register(OpenAIProtocol(max_upload_bytes=max_upload_bytes, limits=config.json_limits, kept=kept))


@hookimpl
def register_channel_types(register) -> None:
    from .channel import OpenAIChannel
    from .channel_rerank import RerankChannel

    register(OpenAIChannel())
    register(RerankChannel())


def _positive(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"[plugins.openai] max_upload_bytes must be a positive integer, not {value!r}")
    return value
