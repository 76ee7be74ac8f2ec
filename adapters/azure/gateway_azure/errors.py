"""Azure OpenAI's error answers, made into the gateway errors each client protocol renders.

Azure answers ``{"error": {"code", "message", …}}``. The openai channel type already turns
an error status into a gateway error carrying Azure's message (``upstream_status`` and
``upstream_body`` keep the answer); :func:`refine` then says more where Azure does:

- **a content-filter refusal** (400, ``code: "content_filter"``, its ``innererror``
  ``ResponsibleAIPolicyViolation`` with ``content_filter_result`` per category): an
  invalid request (400, not retried elsewhere) with ``code: "content_filter"``, ``param``
  as Azure gave it (``prompt``), and the filtered categories and severities in the
  message. An OpenAI client gets it in OpenAI's shape, an Anthropic client as an
  ``invalid_request_error``, a Gemini client as ``INVALID_ARGUMENT``.
- **an api-version the resource does not serve** (400 ``API version not supported``, or
  a 404 ``Resource not found``, Azure's answer to a path or version it does not know): an
  upstream error (502, another channel may serve) naming the channel's setting
  ``api_version`` and path style, since only the operator can fix it.
- **an unknown deployment** (404 ``DeploymentNotFound``): an upstream error naming the
  deployment, so the operator can fix the channel's model map.

Everything else stays as the openai channel type made it (a 401 or 403 refuses the
channel's key, a 429 keeps Azure's ``retry-after``).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import GatewayError, InvalidRequestError, UpstreamError

FILTER_CODE = "content_filter"
_POLICY_CODE = "ResponsibleAIPolicyViolation"


def refine(error: GatewayError, *, deployment: str, api_version: str | None, path_style: str) -> GatewayError:
    """The gateway error to raise for ``error``, an Azure error answer (itself when
    there is nothing to add)."""
    status = error.upstream_status
    if status is None:
        return error
    body = azure_error(error.upstream_body)
    code = str(body.get("code") or "")
    message = str(body.get("message") or "").strip()
    inner = body.get("innererror")
    inner_code = inner.get("code") if isinstance(inner, dict) else None
    refined: GatewayError
    if status == 400 and (code == FILTER_CODE or inner_code == _POLICY_CODE):
        results = inner.get("content_filter_result") if isinstance(inner, dict) else None
        categories = filtered_categories(results)
        which = f" ({', '.join(categories)})" if categories else ""
        param = body.get("param") if isinstance(body.get("param"), str) else "prompt"
        refined = InvalidRequestError(f"Azure's content filter refused the request{which}: {message}", code=FILTER_CODE, param=param)
    elif (status == 400 and "api version" in message.lower()) or (status == 404 and code == "404"):
        version = f"api-version {api_version!r}" if api_version else "no api-version"
        refined = UpstreamError(
            f"the Azure resource refused the channel's {version} on its {path_style} paths ({status}: {message or code}); "
            "set one it serves with --setting api_version=… (or check the base URL and path_style)",
            retryable=True,
        )  # fmt: skip
    elif status == 404 and code == "DeploymentNotFound":
        refined = UpstreamError(f"the Azure deployment {deployment!r} does not exist on this resource: {message}", retryable=True)
    else:
        return error
    refined.upstream_status = status
    refined.upstream_body = error.upstream_body
    refined.key_refused = error.key_refused
    return refined


def azure_error(excerpt: str | None) -> dict[str, Any]:
    """The ``error`` object of an Azure error answer (``{}`` when there is none). The
    excerpt may be cut short: then only its ``code`` is recovered."""
    if not excerpt:
        return {}
    try:
        data = orjson.loads(excerpt)
    except orjson.JSONDecodeError:
        return {"code": FILTER_CODE} if f'"{FILTER_CODE}"' in excerpt.replace(" ", "") else {}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def filtered_categories(results: Any) -> list[str]:
    """``violence: medium``, ``jailbreak`` …: the categories of a
    ``content_filter_result(s)`` object that were filtered."""
    if not isinstance(results, dict):
        return []
    found = []
    for name, result in results.items():
        if isinstance(result, dict) and result.get("filtered") is True:
            severity = result.get("severity")
            found.append(f"{name}: {severity}" if isinstance(severity, str) and severity != "safe" else str(name))
    return found
