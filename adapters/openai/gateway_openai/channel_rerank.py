"""The ``rerank`` channel type: an upstream that reranks documents in the
Cohere/Jina shape (Jina, Cohere, vLLM, Infinity, Xinference, SiliconFlow …).

It serves the ``rerank`` endpoint only. The client's body goes as it came with
the model mapped, to ``{base_url}{path}`` (setting ``path``, ``/v1/rerank`` by
default; Cohere's v2 API is ``/v2/rerank``), with the channel's key as
``Authorization: Bearer``; the answer comes back untouched (see :mod:`.rerank`
for what is read from it to bill it). OpenAI itself has no rerank endpoint, so
``openai`` channels do not serve it: a server that does both (vLLM) is one
channel of each type on the same base URL.

The channel test (``relaygate channel test``, the console's Test button) hands
every channel type a small chat request; this type sends its text as a rerank
of one document.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import ChannelType, ChatRequest, Exchange, JsonReply, Reply, Setting, TextPart, endpoints
from gateway_core.upstream import parse_answer, post, read_all

from .channel import strip_version
from .error_body import upstream_error_message
from .rerank import RERANK_WIRE, rerank_usage

PATH = Setting("path", "str", default="/v1/rerank", help="the upstream's rerank path, after the base URL (Cohere's v2: /v2/rerank)")


class RerankChannel(ChannelType):
    name = "rerank"
    settings = (PATH,)

    def wire(self, endpoint: str) -> str | None:
        return RERANK_WIRE if endpoint == endpoints.RERANK else None

    def normalize_base_url(self, base_url: str) -> str:
        return strip_version(base_url)

    async def send(self, exchange: Exchange) -> Reply:
        call, target = exchange.call, exchange.target
        path = "/" + str(PATH.read(target.channel.settings)).lstrip("/")
        headers = {"Authorization": f"Bearer {target.api_key}", "Content-Type": "application/json"}
        body = {**call.body, "model": target.upstream_model} if exchange.passthrough else _test_body(exchange)
        response = await post(exchange, target.channel.base_url + path, headers=headers, body=orjson.dumps(body), error_message=upstream_error_message)
        data = await read_all(response)
        answer = parse_answer(data)
        usage, estimated = rerank_usage(answer, body)
        return JsonReply(body=data, response=None, usage=usage, model=answer.get("model"), media=estimated)


def _test_body(exchange: Exchange) -> dict[str, Any]:
    """The channel test's chat request as a rerank of its text against itself."""
    request = exchange.request
    texts = [p.text for m in request.messages for p in m.parts if isinstance(p, TextPart)] if isinstance(request, ChatRequest) else []
    text = " ".join(texts) or "ping"
    return {"model": exchange.target.upstream_model, "query": text, "documents": [text]}
