"""The openai adapter's plugin: the OpenAI client protocol, the ``openai`` channel
type and the ``rerank`` channel type (Cohere/Jina-style rerankers).

Settings (``plugins.toml``)::

    [plugins.openai]
    max_upload_bytes = 52428800   # the largest upload (images/edits, audio/transcriptions and translations); 413 beyond it
"""

from __future__ import annotations

from typing import Any

from gateway_core import hookimpl
from gateway_core.config import ConfigError

from .channel import OpenAIChannel
from .channel_rerank import RerankChannel
from .protocol import DEFAULT_MAX_UPLOAD_BYTES, OpenAIProtocol


@hookimpl
def register_client_protocols(register, config) -> None:
    settings = config.plugin_settings("openai")
    max_upload_bytes = _positive(settings.get("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES))
    register(OpenAIProtocol(max_upload_bytes=max_upload_bytes, limits=config.json_limits))


@hookimpl
def register_channel_types(register) -> None:
    register(OpenAIChannel())
    register(RerankChannel())


def _positive(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"[plugins.openai] max_upload_bytes must be a positive integer, not {value!r}")
    return value
