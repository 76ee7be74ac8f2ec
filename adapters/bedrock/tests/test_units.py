"""Model ids, keys, and the request conversion's edges (pure functions)."""

from __future__ import annotations

import pytest

from gateway_bedrock.auth import auth_headers, parse_key
from gateway_bedrock.converse_request import request_to_converse
from gateway_bedrock.model_ids import base_id, is_claude, model_path, provider_model, refuses_temperature_with_top_p
from gateway_core import InvalidRequestError
from gateway_core.model import ChatRequest, Message, ReasoningPart, Role, TextPart, Tool, ToolChoice, ToolChoiceMode

ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0"


@pytest.mark.parametrize(("model", "provider"), [
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
    ("global.anthropic.claude-opus-4-5-20251101-v1:0", "claude-opus-4-5-20251101"),
    ("anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku-20240307"),
    ("meta.llama3-3-70b-instruct-v1:0", "llama3-3-70b-instruct"),
    ("amazon.nova-pro-v1:0", "nova-pro"),
    (ARN, "claude-haiku-4-5-20251001"),
    ("my-own-alias", "my-own-alias"),
])  # fmt: skip
def test_provider_model(model, provider):
    assert provider_model(model) == provider


def test_ids_and_arns_are_one_quoted_path_segment():
    assert model_path("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0"
    assert model_path(ARN) == "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-haiku-4-5-20251001-v1%3A0"
    assert base_id(ARN) == "anthropic.claude-haiku-4-5-20251001-v1:0"
    assert is_claude(ARN) and not is_claude("amazon.nova-pro-v1:0")
    assert refuses_temperature_with_top_p("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert refuses_temperature_with_top_p("anthropic.claude-opus-4-1-20250805-v1:0")
    assert not refuses_temperature_with_top_p("anthropic.claude-sonnet-4-20250514-v1:0")


def test_keys():
    assert parse_key("AKIAX:secret/with+chars").secret_access_key == "secret/with+chars"
    assert parse_key("ASIAX:secret:token").session_token == "token"
    assert parse_key("ABSKQmVkcm9jaw==") is None and parse_key("bedrock-api-key-abc") is None
    signed = auth_headers("ASIAX:secret:token", method="POST", url="https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse",
                          region="us-east-1", content_type="application/json", body=b"{}")  # fmt: skip
    assert signed["X-Amz-Security-Token"] == "token"
    assert "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token," in signed["Authorization"]
    assert auth_headers("ABSKkey", method="POST", url="https://x", region="r", content_type="a", body=b"") == {"Authorization": "Bearer ABSKkey"}


@pytest.mark.parametrize("url", [
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse",
    "https://bedrock-runtime.eu-west-1.amazonaws.com:443/model/arn%3Aaws%3Abedrock%3Aeu-west-1%3A1%3Ainference-profile%2Fx/converse-stream",
    "http://127.0.0.1:8123/model/m/converse?b=2&a=x%20y",
])  # fmt: skip
@pytest.mark.parametrize("key", ["AKIAFAKE:se/cr+et", "ASIAFAKE:secret:session/token+="])
def test_the_signature_is_botocores(url, key):
    """Our signer against botocore's SigV4Auth on the same request at the same moment."""
    import datetime as dt

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import ReadOnlyCredentials

    now = dt.datetime(2026, 11, 29, 4, 5, 6, tzinfo=dt.timezone.utc)
    body = b'{"messages": []}'
    ours = auth_headers(key, method="POST", url=url, region="eu-west-1", content_type="application/json", body=body, now=now)
    iam = parse_key(key)
    theirs = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json", "X-Amz-Date": ours["X-Amz-Date"]})
    if iam.session_token:
        theirs.headers["X-Amz-Security-Token"] = iam.session_token
    theirs.context["timestamp"] = ours["X-Amz-Date"]
    signer = SigV4Auth(ReadOnlyCredentials(iam.access_key_id, iam.secret_access_key, iam.session_token), "bedrock", "eu-west-1")
    expected = signer.signature(signer.string_to_sign(theirs, signer.canonical_request(theirs)), theirs)
    assert ours["Authorization"].endswith(f"Signature={expected}")
    assert "secret" not in repr(parse_key("AKIAX:secret"))


def _request(**fields):
    return ChatRequest(model="m", messages=(Message(Role.USER, (TextPart("hi"),)),), **fields)


def test_reasoning_effort_thinks_only_where_the_catalogue_says_the_model_thinks():
    claude = request_to_converse(_request(extra={"reasoning_effort": "low"}, temperature=0.3), "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert claude["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert claude["inferenceConfig"] == {"maxTokens": 1024 + 4096}
    older = request_to_converse(_request(extra={"reasoning_effort": "low"}), "anthropic.claude-3-haiku-20240307-v1:0")
    assert "additionalModelRequestFields" not in older
    nova = request_to_converse(_request(extra={"reasoning_effort": "high"}, top_k=3), "amazon.nova-pro-v1:0")
    assert "additionalModelRequestFields" not in nova  # top_k and thinking are Claude's fields


def test_turns_merge_system_moves_and_unsigned_reasoning_is_dropped():
    request = ChatRequest(model="m", messages=(
        Message(Role.USER, (TextPart("a"),)), Message(Role.USER, (TextPart(""), TextPart("b"))),
        Message(Role.ASSISTANT, (ReasoningPart("hmm"), TextPart("c"))), Message(Role.SYSTEM, (TextPart("late system"),)),
    ), tools=(Tool("t"),), tool_choice=ToolChoice(ToolChoiceMode.NONE))  # fmt: skip
    body = request_to_converse(request, "amazon.nova-pro-v1:0")
    assert body["messages"] == [{"role": "user", "content": [{"text": "a"}, {"text": "b"}]}, {"role": "assistant", "content": [{"text": "c"}]}]
    assert body["system"] == [{"text": "late system"}]
    assert body["toolConfig"] == {"tools": [{"toolSpec": {"name": "t", "inputSchema": {"json": {"type": "object", "properties": {}}}}}]}


def test_bad_tool_arguments_are_the_clients_400():
    from gateway_core.model import ToolCallPart

    request = ChatRequest(model="m", messages=(Message(Role.ASSISTANT, (ToolCallPart("c1", "t", "{not json"),)),))
    with pytest.raises(InvalidRequestError, match="not JSON"):
        request_to_converse(request, "amazon.nova-pro-v1:0")


def test_usage_counts_cached_and_hour_long_writes_in_the_input():
    from gateway_bedrock.converse_response import usage_from_converse

    usage = usage_from_converse({"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 50,
                                 "cacheDetails": [{"ttl": "1h", "inputTokens": 30}, {"ttl": "5m", "inputTokens": 20}]})  # fmt: skip
    assert (usage.input_tokens, usage.cached_input_tokens, usage.cache_write_tokens, usage.cache_write_1h_tokens) == (160, 100, 50, 30)
    assert usage.output_tokens == 5 and usage_from_converse(None) is None


@pytest.mark.parametrize("bad", ["12", -1, 1.5, True, {"n": 1}, 10**12])
def test_usage_whose_counts_are_no_counts_is_missing(bad):
    from gateway_bedrock.converse_response import usage_from_converse

    assert usage_from_converse({"inputTokens": bad, "outputTokens": 3}) is None
    assert usage_from_converse({"inputTokens": 3, "outputTokens": bad}) is None
    assert usage_from_converse({"inputTokens": 3, "outputTokens": 4, "cacheReadInputTokens": bad}) is None
    assert usage_from_converse({"outputTokens": 4}) is None


def test_a_history_of_tool_calls_without_tools_declares_the_tools_called():
    from gateway_core.model import ToolCallPart, ToolResultPart

    request = ChatRequest(model="m", messages=(
        Message(Role.USER, (TextPart("weather?"),)), Message(Role.ASSISTANT, (ToolCallPart("c1", "get_weather", "{}"),)),
        Message(Role.TOOL, (ToolResultPart("c1", (TextPart("sunny"),)),)), Message(Role.USER, (TextPart("thanks"),)),
    ))  # fmt: skip
    body = request_to_converse(request, "amazon.nova-pro-v1:0")
    assert body["toolConfig"] == {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}}]}
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]  # the result and "thanks" share a turn


def test_the_region_comes_from_the_setting_the_endpoint_or_the_default():
    from gateway_bedrock.runtime import region_of
    from gateway_core.records import ChannelRecord

    def channel(base_url, **settings):
        return ChannelRecord(id=1, name="c", type="bedrock", base_url=base_url, api_keys=("k",), models=(), model_map={}, groups=(), settings=settings)

    assert region_of(channel("https://bedrock-runtime.{region}.amazonaws.com", region="eu-west-3")) == "eu-west-3"
    assert region_of(channel("https://bedrock-runtime.ap-northeast-1.amazonaws.com")) == "ap-northeast-1"
    assert region_of(channel("https://bedrock-runtime.{region}.amazonaws.com")) == "us-east-1"
    assert region_of(channel("http://127.0.0.1:9000")) == "us-east-1"
