"""The fake OpenAI upstream's legacy completions, moderations, translations and
rerank (see :mod:`.fake_upstream`), in the providers' wire formats.

- Completions echo each prompt (``"echo: <prompt>"``) as a ``text_completion``,
  whole or as chunks of one word each, with OpenAI's usage (a usage-only chunk
  with ``choices: []`` when the stream asked for it).
- Moderations flag an input that contains :data:`FLAGGED_WORD` for violence;
  every category OpenAI answers is present. No usage, as at OpenAI.
- Translations answer :data:`TRANSLATION` in the requested format (no usage, as
  at OpenAI; ``verbose_json`` has the duration).
- Rerank scores each document by the query words it contains, best first (ties
  in order), ``top_n`` and ``return_documents`` applied, in Jina's shape with
  ``usage.total_tokens`` at ``/v1/rerank`` and in Cohere's with
  ``meta.billed_units.search_units`` at ``/v2/rerank``.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from .fake_media import AUDIO_SECONDS

JSON = dict[str, Any]
FLAGGED_WORD = "kill"
TRANSLATION = "hello from the fake translator"
CATEGORIES = (
    "harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
    "self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence", "violence/graphic",
)  # fmt: skip


def prompts(body: JSON) -> list[str]:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if prompt and all(isinstance(p, str) for p in prompt):
        return list(prompt)
    return [f"<{len(prompt)} tokens>"] if prompt and type(prompt[0]) is int else [f"<{len(p)} tokens>" for p in prompt]


def completion_usage(body: JSON) -> JSON:
    texts = prompts(body)
    prompt_tokens = sum(len(p) // 4 + 1 for p in texts)
    completion_tokens = sum(len(f"echo: {p}".split()) for p in texts)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}


def _base(body: JSON) -> JSON:
    return {"id": "cmpl-fake123", "object": "text_completion", "created": int(time.time()), "model": body.get("model"), "system_fingerprint": "fp_fake"}


def completion(body: JSON, report_usage: bool) -> JSON:
    choices = [{"index": n, "text": f"echo: {p}", "finish_reason": "stop", "logprobs": None} for n, p in enumerate(prompts(body))]
    return {**_base(body), "choices": choices, "usage": completion_usage(body) if report_usage else None}


def completion_chunks(body: JSON, report_usage: bool) -> list[JSON]:
    """The stream of chunks (each a ``text_completion``); usage last when asked for."""
    base = _base(body)
    chunks: list[JSON] = []
    for n, prompt in enumerate(prompts(body)):
        words = f"echo: {prompt}".split(" ")
        for i, word in enumerate(words):
            text = word if i == 0 else " " + word
            chunks.append({**base, "choices": [{"index": n, "text": text, "finish_reason": None, "logprobs": None}]})
        chunks.append({**base, "choices": [{"index": n, "text": "", "finish_reason": "stop", "logprobs": None}]})
    options = body.get("stream_options")
    if report_usage and isinstance(options, dict) and options.get("include_usage") is True:
        chunks.append({**base, "choices": [], "usage": completion_usage(body)})
    return chunks


def moderation(body: JSON) -> JSON:
    items = body["input"]
    items = [items] if isinstance(items, str) else items
    results = []
    for item in items:
        text = item if isinstance(item, str) else item.get("text", "")
        kinds = ["text"] if isinstance(item, str) or item["type"] == "text" else ["image"]
        flagged = FLAGGED_WORD in text.lower()
        categories = {c: flagged and c == "violence" for c in CATEGORIES}
        scores = {c: (0.91 if categories[c] else 0.0001) for c in CATEGORIES}
        applied = {c: kinds for c in CATEGORIES}
        results.append({"flagged": flagged, "categories": categories, "category_scores": scores, "category_applied_input_types": applied})
    return {"id": "modr-fake123", "model": body.get("model") or "omni-moderation-latest", "results": results}


def translation(model: str, response_format: str) -> web.Response:
    if response_format == "text":
        return web.Response(text=TRANSLATION + "\n", content_type="text/plain")
    if response_format == "srt":
        srt = f"1\n00:00:00,000 --> 00:00:{AUDIO_SECONDS:06.3f}\n{TRANSLATION}\n\n".replace(".", ",")
        return web.Response(text=srt, content_type="text/plain")
    if response_format == "vtt":
        return web.Response(text=f"WEBVTT\n\n00:00:00.000 --> 00:00:{AUDIO_SECONDS:06.3f}\n{TRANSLATION}\n\n", content_type="text/plain")
    if response_format == "verbose_json":
        segment = {"id": 0, "seek": 0, "start": 0.0, "end": AUDIO_SECONDS, "text": TRANSLATION, "tokens": [50364, 2425],
                   "temperature": 0.0, "avg_logprob": -0.2, "compression_ratio": 1.1, "no_speech_prob": 0.01}  # fmt: skip
        return web.json_response({"task": "translate", "language": "english", "duration": AUDIO_SECONDS, "text": TRANSLATION, "segments": [segment]})
    return web.json_response({"text": TRANSLATION})


def _text(document: Any) -> str:
    return document if isinstance(document, str) else str(document["text"])


def rerank(body: JSON, cohere: bool) -> JSON:
    words = set(body["query"].lower().split())
    documents = body["documents"]
    scored = [(sum(w in _text(d).lower() for w in words) / max(1, len(words)), n) for n, d in enumerate(documents)]
    ranked = sorted(scored, key=lambda s: (-s[0], s[1]))[: body.get("top_n") or len(documents)]
    keep = body.get("return_documents", not cohere)  # Jina returns them unless told not to; Cohere v2 never by default
    results = []
    for score, n in ranked:
        result: JSON = {"index": n, "relevance_score": round(0.05 + 0.9 * score, 4)}
        if keep:
            result["document"] = {"text": _text(documents[n])}
        results.append(result)
    if cohere:
        return {"id": "rerank-fake123", "results": results, "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}
    tokens = sum(len(body["query"]) // 4 + 1 + len(_text(d)) // 4 + 1 for d in documents)
    return {"model": body.get("model"), "usage": {"total_tokens": tokens}, "results": results}
