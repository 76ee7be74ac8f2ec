"""The fake Bedrock's control plane (pure): what ``GET /foundation-models`` and
``GET /inference-profiles`` answer, in Bedrock's shapes. The models: Claude Sonnet
4.5 (called through profiles only), Claude 3 Haiku and Nova Pro (on demand and
through profiles), an embedding and an image model; the profiles come
``page_size`` a page, with ``nextToken``."""

from __future__ import annotations

from typing import Any

ARN = "arn:aws:bedrock:us-east-1::foundation-model/"
FOUNDATION_MODELS = (
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "Anthropic", ["TEXT", "IMAGE"], ["TEXT"], ["INFERENCE_PROFILE"]),
    ("anthropic.claude-3-haiku-20240307-v1:0", "Anthropic", ["TEXT", "IMAGE"], ["TEXT"], ["ON_DEMAND"]),
    ("amazon.nova-pro-v1:0", "Amazon", ["TEXT", "IMAGE", "VIDEO"], ["TEXT"], ["ON_DEMAND", "INFERENCE_PROFILE"]),
    ("amazon.titan-embed-text-v2:0", "Amazon", ["TEXT"], ["EMBEDDING"], ["ON_DEMAND"]),
    ("amazon.nova-canvas-v1:0", "Amazon", ["TEXT", "IMAGE"], ["IMAGE"], ["ON_DEMAND"]),
)  # fmt: skip
PROFILES = (
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "ACTIVE"),
    ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "ACTIVE"),
    ("us.amazon.nova-pro-v1:0", "ACTIVE"),
    ("us.amazon.nova-canvas-v1:0", "ACTIVE"),  # an image model: not listed by the gateway
    ("eu.anthropic.claude-3-haiku-20240307-v1:0", "ACTIVE"),
)


def foundation_models(output_modality: str | None) -> dict[str, Any]:
    summaries = [
        {"modelArn": ARN + model, "modelId": model, "modelName": model, "providerName": provider, "inputModalities": inputs,
         "outputModalities": outputs, "responseStreamingSupported": outputs == ["TEXT"], "customizationsSupported": [],
         "inferenceTypesSupported": kinds, "modelLifecycle": {"status": "ACTIVE"}}
        for model, provider, inputs, outputs, kinds in FOUNDATION_MODELS
        if output_modality is None or output_modality in outputs
    ]  # fmt: skip
    return {"modelSummaries": summaries}


def inference_profiles(token: str | None, page_size: int) -> dict[str, Any]:
    start = int(token.removeprefix("page+")) if token else 0
    summaries = [
        {"inferenceProfileId": profile, "inferenceProfileName": profile, "status": status, "type": "SYSTEM_DEFINED",
         "inferenceProfileArn": f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{profile}",
         "models": [{"modelArn": ARN + profile.split(".", 1)[1]}]}
        for profile, status in PROFILES[start : start + page_size]
    ]  # fmt: skip
    page: dict[str, Any] = {"inferenceProfileSummaries": summaries}
    if start + page_size < len(PROFILES):
        page["nextToken"] = f"page+{start + page_size}"  # a '+' to quote, as Bedrock's tokens have
    return page
