"""The deployments of an Azure OpenAI resource: what an azure channel's upstream lists.

An Azure resource serves a model under each deployment its owner created, and requests
name the deployment, not the model. The resource's data plane lists them at
``GET {endpoint}/openai/deployments?api-version=2022-12-01`` (the authoring API's GA
version; the inference api-versions do not serve this path), authenticated like every
call (the ``api-key`` header or an Entra ID bearer token), answering
``{"object": "list", "data": [{"id": DEPLOYMENT, "model": BASE_MODEL, "status":
"succeeded", …}]}`` in one page. The ids listed are the deployment names of the
deployments that can serve (``status`` ``succeeded``): they are what the channel sends
upstream, and its model map (``--model-map CLIENT_MODEL=DEPLOYMENT``) maps the names
clients ask for to them.

A resource that answers the path with a 404 or refuses the api-version (Azure retired the
data-plane listing on some resources in favour of its management plane) is said so, with
what to do instead: map each client model to its deployment by hand.
"""

from __future__ import annotations

from urllib.parse import quote

from gateway_core import GatewayError, ModelQuery, UpstreamError
from gateway_core.upstream_models import entries, get_page

from .errors import azure_error

DEPLOYMENTS_API_VERSION = "2022-12-01"
DEPLOYMENTS_PATH = "/openai/deployments"


def deployments_url(base_url: str) -> str:
    return f"{base_url}{DEPLOYMENTS_PATH}?api-version={quote(DEPLOYMENTS_API_VERSION, safe='')}"


async def list_deployments(query: ModelQuery, headers: dict[str, str]) -> list[str]:
    """The names of the resource's deployments that can serve, in Azure's order."""
    try:
        page = await get_page(query, deployments_url(query.channel.base_url), headers=headers, error_message=error_message)
    except GatewayError as error:
        raise _refined(error) from None
    names = []
    for item in entries(page, "data"):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        if item.get("status", "succeeded") != "succeeded":  # creating, failed, deleted …: nothing to send yet
            continue
        names.append(item["id"])
    return names[: query.limits.models]


def error_message(status: int, body: bytes) -> str:
    """The message of an Azure error answer (``{"error": {"code", "message"}}``)."""
    said = azure_error(body.decode("utf-8", "replace"))
    message = said.get("message") or said.get("code")
    return " ".join(str(message).split())[:500] if message else f"HTTP {status}"


def _refined(error: GatewayError) -> GatewayError:
    """A 404 or a refused api-version: the resource does not list its deployments."""
    status = error.upstream_status
    said = azure_error(error.upstream_body)
    message = str(said.get("message") or said.get("code") or "").strip()
    if status == 404 or (status == 400 and "api version" in message.lower()):
        refined = UpstreamError(
            f"the Azure resource does not list its deployments at {DEPLOYMENTS_PATH}?api-version={DEPLOYMENTS_API_VERSION} "
            f"({status}: {message or 'not found'}); put the deployments you created in the channel's models, "
            "or map each client model to its deployment with --model-map MODEL=DEPLOYMENT"
        )
        refined.upstream_status, refined.upstream_body = status, error.upstream_body
        return refined
    return error
