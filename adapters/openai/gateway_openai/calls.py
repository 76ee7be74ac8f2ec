"""Request bodies of the OpenAI routes → :class:`Call` values (pure but for uploads).

Each parser checks what the gateway itself needs (the model, the fields routing
and billing read) and leaves the rest of the body to the upstream. The wire
names say which channels may take a call as it is (the fast path).

- Responses calls are ``chat`` calls in the core's terms — every chat channel can
  serve them through the core model — except those that need state kept by a
  Responses upstream (``previous_response_id`` …, see
  :func:`~.responses_request.stateful_reason`): those are ``responses`` calls,
  served only by channels that speak Responses.
- Billing hints (:class:`~gateway_core.BillingHints`): the output cap
  (``max_completion_tokens``, else ``max_tokens``; ``max_output_tokens`` for
  Responses), images asked for, characters spoken, audio length estimated from
  an upload's size, and the image price variants ``model:size:quality`` and
  ``model:size``.
- Images may be streamed (``stream: true``, a form field ``stream=true`` for
  edits), with ``partial_images`` from 0 to 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway_core import BillingHints, Call, InvalidRequestError, MediaUsage, RouteSpec, capped_output, endpoints
from gateway_core.uploads import Upload

from .media import MAX_PARTIAL_IMAGES, estimated_audio_ms, image_output_tokens, image_price_variants
from .responses_request import stateful_reason

CHAT_WIRE = "openai.chat"
RESPONSES_WIRE = "openai.responses"
EMBEDDINGS_WIRE = "openai.embeddings"
IMAGES_WIRE = "openai.images"
IMAGE_EDITS_WIRE = "openai.images.edits"
SPEECH_WIRE = "openai.audio.speech"
TRANSCRIPTIONS_WIRE = "openai.audio.transcriptions"
TRANSLATIONS_WIRE = "openai.audio.translations"
PROTOCOL = "openai"
MAX_IMAGES = 10
ENCODINGS = ("float", "base64")


def required_model(data: Mapping[str, Any]) -> str:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("The request needs a 'model' (a non-empty string).", param="model")
    return model


def stream_flag(data: Mapping[str, Any]) -> bool:
    stream = data.get("stream", False)
    if stream is None:
        return False
    if not isinstance(stream, bool):
        raise InvalidRequestError("'stream' must be true or false.", param="stream")
    return stream


def chat_call(route: RouteSpec, data: dict[str, Any]) -> Call:
    model, stream = required_model(data), stream_flag(data)
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequestError("'messages' must be a non-empty list.", param="messages")
    options = {}
    if stream:
        stream_options = data.get("stream_options")
        options["include_usage"] = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    billing = capped_output(data.get("max_completion_tokens"), data.get("max_tokens"))
    return Call(PROTOCOL, route.endpoint, CHAT_WIRE, model, stream, data, options, billing=billing)


def responses_call(route: RouteSpec, data: dict[str, Any]) -> Call:
    model, stream = required_model(data), stream_flag(data)
    items = data.get("input")
    if items is not None and not isinstance(items, (str, list)):
        raise InvalidRequestError("'input' must be a string or an array of input items.", param="input")
    stateful = stateful_reason(data)
    if items is None and stateful is None:
        raise InvalidRequestError("The request needs an 'input' (a string or an array of input items).", param="input")
    endpoint = endpoints.RESPONSES if stateful else endpoints.CHAT
    billing = capped_output(data.get("max_output_tokens"))
    return Call(PROTOCOL, endpoint, RESPONSES_WIRE, model, stream, data, {"stateful": stateful}, billing=billing)


def embeddings_call(route: RouteSpec, data: dict[str, Any]) -> Call:
    model = required_model(data)
    items = data.get("input")
    if not _embeddable(items):
        raise InvalidRequestError(
            "'input' must be a non-empty string, array of strings, array of token ids or array of token arrays.",
            param="input",
        )
    encoding = data.get("encoding_format")
    if encoding is not None and encoding not in ENCODINGS:
        raise InvalidRequestError("'encoding_format' must be 'float' or 'base64'.", param="encoding_format")
    dimensions = data.get("dimensions")
    if dimensions is not None and (type(dimensions) is not int or dimensions < 1):
        raise InvalidRequestError("'dimensions' must be a positive integer.", param="dimensions")
    return Call(PROTOCOL, route.endpoint, EMBEDDINGS_WIRE, model, False, data, {"encoding_format": encoding or "float"})


def _embeddable(items: Any) -> bool:
    if isinstance(items, str):
        return bool(items)
    if not isinstance(items, list) or not items:
        return False
    if all(isinstance(i, str) for i in items):
        return True
    if all(type(i) is int for i in items):
        return True
    return all(isinstance(i, list) and i and all(type(t) is int for t in i) for i in items)


def image_generation_call(route: RouteSpec, data: dict[str, Any]) -> Call:
    model = required_model(data)
    if not isinstance(data.get("prompt"), str) or not data["prompt"]:
        raise InvalidRequestError("The request needs a 'prompt' (a non-empty string).", param="prompt")
    stream = stream_flag(data)
    n = _image_count(data.get("n"))
    partial = _partial_images(data.get("partial_images"), stream)
    billing = _image_hints(model, n, data.get("size"), data.get("quality"), partial)
    return Call(PROTOCOL, route.endpoint, IMAGES_WIRE, model, stream, data, billing=billing)


async def image_edit_call(route: RouteSpec, upload: Upload) -> Call:
    fields = await upload.read_form_head(("model",))
    model = fields.get("model") or ""
    if not model:
        raise InvalidRequestError("The form field 'model' must name a model.", param="model")
    stream = _form_bool(fields.get("stream"), "stream")
    n = _image_count(_form_int(fields.get("n"), "n"))
    partial = _partial_images(_form_int(fields.get("partial_images"), "partial_images"), stream)
    billing = _image_hints(model, n, fields.get("size"), fields.get("quality"), partial)
    return Call(PROTOCOL, route.endpoint, IMAGE_EDITS_WIRE, model, stream, dict(fields), upload=upload, billing=billing)


def speech_call(route: RouteSpec, data: dict[str, Any]) -> Call:
    model = required_model(data)
    text = data.get("input")
    if not isinstance(text, str) or not text:
        raise InvalidRequestError("The request needs an 'input' (the text to speak).", param="input")
    fmt = data.get("response_format") or "mp3"
    sse = data.get("stream_format") == "sse"
    options = {"response_format": fmt, "sse": sse}
    billing = BillingHints(media=MediaUsage(characters=len(text)))
    return Call(PROTOCOL, route.endpoint, SPEECH_WIRE, model, True, data, options, billing=billing)


async def transcription_call(route: RouteSpec, upload: Upload) -> Call:
    """A transcription or a translation (into English: the same form, never streamed)."""
    fields = await upload.read_form_head(("model",))
    model = fields.get("model") or ""
    if not model:
        raise InvalidRequestError("The form field 'model' must name a model.", param="model")
    translation = route.endpoint == endpoints.AUDIO_TRANSLATIONS
    stream = not translation and fields.get("stream", "false").lower() == "true"
    size = upload.content_length or 0
    options = {"response_format": fields.get("response_format") or "json"}
    billing = BillingHints(media=MediaUsage(audio_ms=estimated_audio_ms(size), estimated=True))
    wire = TRANSLATIONS_WIRE if translation else TRANSCRIPTIONS_WIRE
    return Call(PROTOCOL, route.endpoint, wire, model, stream, dict(fields), options, upload=upload, billing=billing)


def _image_hints(model: str, n: int, size: Any, quality: Any, partial_images: int) -> BillingHints:
    size_text = size if isinstance(size, str) else None
    quality_text = quality if isinstance(quality, str) else None
    return BillingHints(
        max_output_tokens=image_output_tokens(model, size_text, quality_text, partial_images),  # per image
        media=MediaUsage(images=n),
        price_variants=image_price_variants(model, size_text, quality_text),
    )


def _image_count(n: Any) -> int:
    if n is None:
        return 1
    if type(n) is not int or not 1 <= n <= MAX_IMAGES:
        raise InvalidRequestError(f"'n' must be an integer from 1 to {MAX_IMAGES}.", param="n")
    return n


def _form_int(value: str | None, param: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidRequestError(f"The form field '{param}' must be an integer.", param=param) from None


def _form_bool(value: str | None, param: str) -> bool:
    if value is None:
        return False
    if value.lower() not in ("true", "false"):
        raise InvalidRequestError(f"The form field '{param}' must be 'true' or 'false'.", param=param)
    return value.lower() == "true"


def _partial_images(value: Any, stream: bool) -> int:
    """The partial images a streamed image request asks for (0 when not streamed:
    the upstream sends none then)."""
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= MAX_PARTIAL_IMAGES:
        raise InvalidRequestError(f"'partial_images' must be an integer from 0 to {MAX_PARTIAL_IMAGES}.", param="partial_images")
    return value if stream else 0
