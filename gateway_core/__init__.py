"""Relaygate's core: the public API plugins import from.

Plugins (the bundled adapters and the console too) import what ``__all__``
offers and the modules named in :data:`PUBLIC_MODULES`; everything else is
internal and may change without notice. ``tests/test_architecture.py``
enforces it. Importing this package loads nothing but itself: each name of
the contract (the model, errors, hook specifications and the protocol,
channel and policy interfaces) is imported from its module when first read,
so a plugin module that needs only ``hookimpl`` costs ``relaygate --help``
nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import lazy

if TYPE_CHECKING:
    from . import endpoints
    from .channel_settings import Setting
    from .channel_type import ChannelType, Exchange, JsonReply, ModelQuery, ModelsNotListed, Reply, StreamReply, Target, Timeouts
    from .client_protocol import BillingHints, Call, Caller, ClientProtocol, Frame, FrameConversation, LocalAnswer, RenderedError, RouteSpec, StreamWriter, capped_output
    from .errors import (
        AuthenticationError,
        GatewayError,
        InsufficientQuotaError,
        InternalError,
        InvalidRequestError,
        NotFoundError,
        PermissionDeniedError,
        RateLimitError,
        RequestTooLargeError,
        UpstreamError,
        UpstreamTimeoutError,
        UpstreamUnavailableError,
    )
    from .hookspecs import hookimpl
    from .model import (
        ChatRequest,
        ChatResponse,
        CoreRequest,
        CoreResponse,
        EmbeddingsRequest,
        EmbeddingsResponse,
        ImagePart,
        InputReport,
        MediaUsage,
        Message,
        ModelInfo,
        Part,
        PartDelta,
        PartStart,
        PartStop,
        ReasoningPart,
        Role,
        StopReason,
        StreamEvent,
        StreamFinish,
        StreamStart,
        TextPart,
        Tool,
        ToolCallPart,
        ToolChoice,
        ToolChoiceMode,
        ToolResultPart,
        Usage,
        UsageReport,
    )
    from .policy import Policy
    from .ratelimit import Allowance, RateLimitState
    from .records import ChannelRecord, KeyRecord
    from .runtime.app_state import services_from_scope
    from .uploads import Upload

if not TYPE_CHECKING:  # mypy reads the imports above
    __getattr__ = lazy.loader(__name__, lazy.by_module({  # the contract's names by the module that defines each, imported when first read
        ".endpoints": ("endpoints",),
        ".channel_settings": ("Setting",),
        ".channel_type": ("ChannelType", "Exchange", "JsonReply", "ModelQuery", "ModelsNotListed", "Reply", "StreamReply", "Target", "Timeouts"),
        ".client_protocol": ("BillingHints", "Call", "Caller", "ClientProtocol", "Frame", "FrameConversation", "LocalAnswer", "RenderedError", "RouteSpec", "StreamWriter", "capped_output"),
        ".errors": ("AuthenticationError", "GatewayError", "InsufficientQuotaError", "InternalError", "InvalidRequestError", "NotFoundError", "PermissionDeniedError", "RateLimitError", "RequestTooLargeError", "UpstreamError", "UpstreamTimeoutError", "UpstreamUnavailableError"),
        ".hookspecs": ("hookimpl",),
        ".model": ("ChatRequest", "ChatResponse", "CoreRequest", "CoreResponse", "EmbeddingsRequest", "EmbeddingsResponse", "ImagePart", "InputReport", "MediaUsage", "Message", "ModelInfo", "Part", "PartDelta", "PartStart", "PartStop", "ReasoningPart", "Role", "StopReason", "StreamEvent", "StreamFinish", "StreamStart", "TextPart", "Tool", "ToolCallPart", "ToolChoice", "ToolChoiceMode", "ToolResultPart", "Usage", "UsageReport"),
        ".policy": ("Policy",),
        ".ratelimit": ("Allowance", "RateLimitState"),
        ".records": ("ChannelRecord", "KeyRecord"),
        ".runtime.app_state": ("services_from_scope",),
        ".uploads": ("Upload",),
    }))


# The modules plugins may import, besides this package's own names (docs/hooks.md).
PUBLIC_MODULES = (
    "gateway_core",
    "gateway_core.admin",  # the admin layer: Admin, its port, its errors
    "gateway_core.admin.audit",  # the audit log of writes
    "gateway_core.admin.channels",  # admin operations by subject (the CLI's and the console's)
    "gateway_core.admin.channel_models",  # a channel's models fetched from its upstream
    "gateway_core.admin.budgets",
    "gateway_core.admin.codes",
    "gateway_core.admin.groups",
    "gateway_core.admin.keys",
    "gateway_core.admin.prices",
    "gateway_core.admin.rules",  # the rules of values every front takes: one message for a wrong one, everywhere
    "gateway_core.admin.setup",
    "gateway_core.admin.teams",  # teams, their members and usage, with the caller's role checked (docs/teams.md)
    "gateway_core.admin.team_keys",  # a team's keys
    "gateway_core.admin.sso_users",  # users and team memberships from an OpenID provider's claims
    "gateway_core.admin.signups",  # self sign-ups waiting for a site admin's approval
    "gateway_core.admin.tokens",  # personal access tokens of the management API
    "gateway_core.admin.usage",
    "gateway_core.admin.usage_export",  # the usage log as CSV or JSON lines, streamed
    "gateway_core.billing.catalogue",  # the model catalogue: list prices and what each model can do
    "gateway_core.admin.users",
    "gateway_core.admin.wallet",
    "gateway_core.channel_settings",  # Setting: per-channel settings a channel type declares, validate_settings
    "gateway_core.channel_type",  # ChannelType and what a channel type returns
    "gateway_core.client_protocol",  # ClientProtocol, Call and what a protocol renders
    "gateway_core.commands.kit",  # the helper kit for relaygate sub-commands
    "gateway_core.config",  # Config and ConfigError, given to every hook
    "gateway_core.echo_ids",  # opaque data a client echoes back inside tool-call ids
    "gateway_core.endpoints",  # endpoint names
    "gateway_core.errors",  # GatewayError and its kinds
    "gateway_core.hookspecs",  # every hook, and the type of each hook's register callback
    "gateway_core.gateway",  # Gateway: what policies and plugin routes may use of the gateway
    "gateway_core.framing",  # non-SSE stream framing: newline-delimited JSON, streamed JSON arrays
    "gateway_core.json_body",  # reading a client's JSON body within limits
    "gateway_core.key_header",  # reading an API key from headers
    "gateway_core.model",  # the normalized model
    "gateway_core.money",  # micro-USD parsing and formatting, for the edges
    "gateway_core.policy",  # the Policy interface
    "gateway_core.ratelimit",  # rate-limit state a protocol renders as headers
    "gateway_core.reasoning",  # one table between reasoning effort names and thinking budgets
    "gateway_core.records",  # the records the store hands out
    "gateway_core.team_records",  # a team, a member and their role
    "gateway_core.secrets",  # hashing and masking secrets
    "gateway_core.sql",  # SQL handles for a plugin's own tables
    "gateway_core.observers",  # Observer: told of the request path's events, registered through register_observers
    "gateway_core.sign_in",  # SessionReader, SessionUser, CSRF_HEADER: sign-in sessions on the management API
    "gateway_core.shared_state",  # SharedStateKind: where workers and replicas share state, registered through register_shared_state
    "gateway_core.stores",  # StoreKind: a kind of database, registered through register_stores
    "gateway_core.sessions",  # WebSocket sessions with an upstream: UpstreamSession, SessionMessage
    "gateway_core.sse",  # stream framing
    "gateway_core.kept_responses",  # answers a protocol keeps for its clients
    "gateway_core.tally",  # token estimates
    "gateway_core.testing",  # the test kit
    "gateway_core.types",  # ASGI and callback types
    "gateway_core.uploads",  # streamed multipart uploads
    "gateway_core.upstream",  # calling an upstream from a channel type
    "gateway_core.upstream_tokens",  # short-lived upstream credentials kept per channel (OAuth access tokens)
    "gateway_core.upstream_upload",  # sending an upload upstream
    "gateway_core.upstream_models",  # listing an upstream's models (ChannelType.list_models)
)

__all__ = [
    "PUBLIC_MODULES",
    "Allowance",
    "AuthenticationError",
    "BillingHints",
    "Call",
    "Caller",
    "ChannelRecord",
    "ChannelType",
    "ChatRequest",
    "ChatResponse",
    "ClientProtocol",
    "CoreRequest",
    "CoreResponse",
    "EmbeddingsRequest",
    "EmbeddingsResponse",
    "Exchange",
    "Frame",
    "FrameConversation",
    "GatewayError",
    "ImagePart",
    "InputReport",
    "InsufficientQuotaError",
    "InternalError",
    "InvalidRequestError",
    "JsonReply",
    "KeyRecord",
    "LocalAnswer",
    "MediaUsage",
    "Message",
    "ModelInfo",
    "ModelQuery",
    "ModelsNotListed",
    "NotFoundError",
    "Part",
    "PartDelta",
    "PartStart",
    "PartStop",
    "PermissionDeniedError",
    "Policy",
    "RateLimitError",
    "RateLimitState",
    "ReasoningPart",
    "RenderedError",
    "Reply",
    "RequestTooLargeError",
    "Role",
    "RouteSpec",
    "Setting",
    "StopReason",
    "StreamEvent",
    "StreamFinish",
    "StreamReply",
    "StreamStart",
    "StreamWriter",
    "Target",
    "TextPart",
    "Timeouts",
    "Tool",
    "ToolCallPart",
    "ToolChoice",
    "ToolChoiceMode",
    "ToolResultPart",
    "Upload",
    "UpstreamError",
    "UpstreamTimeoutError",
    "UpstreamUnavailableError",
    "Usage",
    "UsageReport",
    "capped_output",
    "endpoints",
    "hookimpl",
    "services_from_scope",
]
