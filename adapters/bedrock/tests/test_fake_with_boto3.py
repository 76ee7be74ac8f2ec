"""The fake Bedrock is proven first with AWS's own client: boto3's ``bedrock-runtime``
(``converse``, ``converse_stream``) against it on loopback, with dummy credentials.
boto3 is synchronous: each call runs in a thread while the fake serves on the test's loop."""

from __future__ import annotations

import asyncio
import base64

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from gateway_bedrock.fake_upstream import ACCESS_KEY_ID, REASONING, SECRET_ACCESS_KEY, SIGNATURE, Fault

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def client(url: str, secret: str = SECRET_ACCESS_KEY, key_id: str = ACCESS_KEY_ID, region: str = "us-east-1"):
    return boto3.client(
        "bedrock-runtime", region_name=region, endpoint_url=url, aws_access_key_id=key_id, aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )  # fmt: skip


async def test_converse(bedrock):
    answer = await asyncio.to_thread(
        client(bedrock.url).converse, modelId=MODEL, system=[{"text": "Be brief."}],
        messages=[{"role": "user", "content": [{"text": "hello there"}, {"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}]}],
        inferenceConfig={"maxTokens": 64, "temperature": 0.5},
    )  # fmt: skip
    assert answer["output"]["message"]["content"] == [{"text": "echo: hello there"}]
    assert answer["stopReason"] == "end_turn"
    assert answer["usage"] == {"inputTokens": 4, "outputTokens": 3, "totalTokens": 7}
    received = bedrock.requests[-1]
    assert received["raw_path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"  # the SDK quotes the id
    assert received["body"]["messages"][0]["content"][1] == {"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}
    assert received["headers"]["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/")


async def test_a_wrong_secret_or_key_is_refused_as_bedrock_does(bedrock):
    with pytest.raises(ClientError) as refused:
        await asyncio.to_thread(client(bedrock.url, secret="wrong").converse, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert refused.value.response["Error"]["Code"] == "InvalidSignatureException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as unknown:
        await asyncio.to_thread(client(bedrock.url, key_id="AKIAUNKNOWN").converse, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert unknown.value.response["Error"]["Code"] == "UnrecognizedClientException"
    with pytest.raises(ClientError) as region:
        await asyncio.to_thread(client(bedrock.url, region="eu-west-1").converse, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert region.value.response["Error"]["Code"] == "InvalidSignatureException"


async def test_throttling_is_the_sdks_throttling_exception(bedrock):
    bedrock.fail_next(Fault(status=429))
    with pytest.raises(ClientError) as throttled:
        await asyncio.to_thread(client(bedrock.url).converse, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert throttled.value.response["Error"]["Code"] == "ThrottlingException"


def _stream(url: str, **kwargs):
    answer = client(url).converse_stream(**kwargs)
    return list(answer["stream"])


async def test_converse_stream_with_thinking_and_usage(bedrock):
    bedrock.cache_read, bedrock.cache_write = 7, 2
    events = await asyncio.to_thread(
        _stream, bedrock.url, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "one two three"}]}],
        additionalModelRequestFields={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )  # fmt: skip
    kinds = [next(iter(event)) for event in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    reasoning = [e["contentBlockDelta"]["delta"]["reasoningContent"] for e in events if "reasoningContent" in e.get("contentBlockDelta", {}).get("delta", {})]
    assert reasoning == [{"text": REASONING}, {"signature": SIGNATURE}]
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)
    assert text == "echo: one two three"
    usage = events[-1]["metadata"]["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["cacheReadInputTokens"], usage["cacheWriteInputTokens"]) == (3, 4, 7, 2)


async def test_converse_stream_tool_use(bedrock):
    bedrock.tool_use = {"name": "get_weather", "input": {"city": "Paris"}}
    tools = {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}}]}
    events = await asyncio.to_thread(
        _stream, bedrock.url, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "weather?"}]}], toolConfig=tools
    )
    start = next(e["contentBlockStart"] for e in events if "contentBlockStart" in e)
    assert start["start"]["toolUse"] == {"toolUseId": "tooluse_fake01", "name": "get_weather"}
    pieces = "".join(e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {}))
    assert pieces == '{"city":"Paris"}'
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"


async def test_an_exception_frame_mid_stream_is_the_sdks_error(bedrock):
    bedrock.stream_exception = "throttlingException"
    bedrock.fail_next(Fault(error_after=2))
    with pytest.raises(EventStreamError) as failed:
        await asyncio.to_thread(_stream, bedrock.url, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "a b c"}]}])
    assert failed.value.response["Error"]["Code"] == "throttlingException"


async def test_the_sdk_quotes_an_arn_as_the_channel_does(bedrock):
    from gateway_bedrock.model_ids import model_path

    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
    await asyncio.to_thread(client(bedrock.url).converse, modelId=arn, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert bedrock.requests[-1]["raw_path"] == f"/model/{model_path(arn)}/converse"
    await asyncio.to_thread(client(bedrock.url).converse, modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert bedrock.requests[-1]["raw_path"] == f"/model/{model_path(MODEL)}/converse"


async def test_the_sdk_validates_the_request_shapes_the_channel_writes(bedrock):
    """botocore checks parameters against Bedrock's service model before sending: the
    channel's output for a rich request goes through it unchanged."""
    from gateway_bedrock.converse_request import request_to_converse
    from gateway_core.model import ChatRequest, ImagePart, Message, ReasoningPart, Role, TextPart, Tool, ToolCallPart, ToolChoice, ToolChoiceMode, ToolResultPart

    cached = {"anthropic_extra": {"cache_control": {"type": "ephemeral", "ttl": "1h"}}}
    request = ChatRequest(
        model="m", system=(TextPart("rules", cached),), max_tokens=2048, temperature=0.5, stop=("END",),
        messages=(
            Message(Role.USER, (TextPart("look", cached), ImagePart(data=PNG, media_type="image/png"))),
            Message(Role.ASSISTANT, (ReasoningPart("hmm", {"anthropic_signature": "c2ln"}), ToolCallPart("t1", "get_weather", '{"city": "Oslo"}'))),
            Message(Role.TOOL, (ToolResultPart("t1", (TextPart("cold"),), is_error=True),)),
        ),
        tools=(Tool("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}),),
        tool_choice=ToolChoice(ToolChoiceMode.TOOL, "get_weather"), top_k=5, extra={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )  # fmt: skip
    body = request_to_converse(request, MODEL)
    body["messages"] = [{**turn, "content": [_bytes_in(block) for block in turn["content"]]} for turn in body["messages"]]
    await asyncio.to_thread(client(bedrock.url).converse, modelId=MODEL, **body)
    received = bedrock.requests[-1]["body"]
    assert received["system"][1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert received["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["signature"] == "c2ln"


def _bytes_in(block):
    """The SDK takes blobs as bytes where the wire (JSON) has base64."""
    if "image" in block:
        return {"image": {**block["image"], "source": {"bytes": base64.b64decode(block["image"]["source"]["bytes"])}}}
    return block


async def test_temporary_credentials_need_their_session_token(bedrock):
    bedrock.credentials["ASIAFAKETEMPORARY001"] = "temporary/secret"
    bedrock.session_tokens["ASIAFAKETEMPORARY001"] = "session-token-1"
    bedrock.expired_tokens.add("session-token-0")

    def converse(token):
        sdk = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=bedrock.url, aws_access_key_id="ASIAFAKETEMPORARY001",
                           aws_secret_access_key="temporary/secret", aws_session_token=token, config=Config(retries={"total_max_attempts": 1}))  # fmt: skip
        return sdk.converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])

    assert (await asyncio.to_thread(converse, "session-token-1"))["output"]["message"]["content"] == [{"text": "echo: hi"}]
    with pytest.raises(ClientError) as expired:
        await asyncio.to_thread(converse, "session-token-0")
    assert expired.value.response["Error"]["Code"] == "ExpiredTokenException"
