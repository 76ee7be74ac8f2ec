"""Rerank (``POST /v1/rerank``, the Cohere/Jina shape): the call, and its usage
(pure, no I/O).

The body: ``model``, ``query`` (a string), ``documents`` (strings, or objects
with a string ``text``), and optionally ``top_n`` and ``return_documents``; other
fields (``max_chunks_per_doc``, ``max_tokens_per_doc`` …) go upstream untouched.
The answer, passed through as the upstream gave it, has ``results: [{index,
relevance_score, document?}]`` and the upstream's usage: ``usage`` (Jina, vLLM,
Infinity) or ``meta.billed_units`` (Cohere).

Billing: the tokens reported (``usage.prompt_tokens``, else
``usage.total_tokens``, else ``meta.billed_units.input_tokens``); with none
(Cohere reports search units only), the query and the documents are counted at 4
characters a token and the usage row is marked estimated. A rerank has no output;
the price per request applies (a Cohere search unit is one query over up to 100
documents).
"""

from __future__ import annotations

from typing import Any

from gateway_core import Call, InvalidRequestError, RouteSpec
from gateway_core.model import MediaUsage, Usage
from gateway_core.tally import estimate_tokens

from .calls import PROTOCOL, required_model
from .moderations import ESTIMATED

RERANK_WIRE = "rerank"  # the Cohere/Jina body, which every rerank upstream takes
JSON = dict[str, Any]


def rerank_call(route: RouteSpec, data: JSON) -> Call:
    """A rerank body as a call; 400 when a field the gateway reads is not usable."""
    model = required_model(data)
    query = data.get("query")
    if not isinstance(query, str) or not query:
        raise InvalidRequestError("The request needs a 'query' (a non-empty string).", param="query")
    documents = data.get("documents")
    if not isinstance(documents, list) or not documents or not all(document_text(d) is not None for d in documents):
        raise InvalidRequestError(
            "'documents' must be a non-empty array of strings or of objects with a string 'text'.", param="documents"
        )
    top_n = data.get("top_n")
    if top_n is not None and (type(top_n) is not int or top_n < 1):
        raise InvalidRequestError("'top_n' must be a positive integer.", param="top_n")
    if data.get("return_documents") is not None and not isinstance(data["return_documents"], bool):
        raise InvalidRequestError("'return_documents' must be true or false.", param="return_documents")
    return Call(PROTOCOL, route.endpoint, RERANK_WIRE, model, False, data)


def document_text(document: Any) -> str | None:
    """The text of one document: a string, or an object's ``text``; ``None`` for neither."""
    if isinstance(document, str):
        return document
    if isinstance(document, dict) and isinstance(document.get("text"), str):
        return str(document["text"])
    return None


def rerank_usage(answer: Any, body: JSON) -> tuple[Usage, MediaUsage | None]:
    """The tokens an answer reports, else the estimate over the query and documents
    (marked estimated)."""
    reported = reported_tokens(answer) if isinstance(answer, dict) else None
    if reported is not None:
        return Usage(input_tokens=reported), None
    chars = len(str(body.get("query") or "")) + sum(len(document_text(d) or "") for d in body.get("documents") or ())
    return Usage(input_tokens=estimate_tokens(chars)), ESTIMATED


def reported_tokens(answer: JSON) -> int | None:
    usage = answer.get("usage")
    meta = answer.get("meta")
    billed = meta.get("billed_units") if isinstance(meta, dict) else None
    for source, name in ((usage, "prompt_tokens"), (usage, "total_tokens"), (billed, "input_tokens")):
        value = source.get(name) if isinstance(source, dict) else None
        if type(value) is int and value >= 0:
            return value
    return None
