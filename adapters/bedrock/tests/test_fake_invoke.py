"""The fake Bedrock's InvokeModel and InvokeModelWithResponseStream are proven first
with the official clients talking to it directly on loopback: boto3's
``bedrock-runtime`` (``invoke_model``, ``invoke_model_with_response_stream``) and
the ``anthropic`` SDK's ``AnthropicBedrock`` (``messages.create``, plain and
streamed), both signing with botocore; the fake checks every signature."""

from __future__ import annotations

import asyncio
import json

import anthropic
import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from gateway_bedrock.fake_upstream import ACCESS_KEY_ID, REASONING, SECRET_ACCESS_KEY, SIGNATURE, Fault

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BODY = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there", "cache_control": {"type": "ephemeral"}}]}]}  # fmt: skip


def runtime(url: str, secret: str = SECRET_ACCESS_KEY):
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=url, aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )  # fmt: skip


def claude(url: str, secret: str = SECRET_ACCESS_KEY) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(aws_access_key=ACCESS_KEY_ID, aws_secret_key=secret, aws_region="us-east-1", base_url=url, max_retries=0)


async def test_invoke_model_with_boto3(bedrock):
    bedrock.cache_read, bedrock.cache_write = 7, 9
    answer = await asyncio.to_thread(runtime(bedrock.url).invoke_model, modelId=MODEL, body=json.dumps(BODY), contentType="application/json")
    message = json.loads(answer["body"].read())
    assert message["content"] == [{"type": "text", "text": "echo: hello there"}]
    assert message["usage"] == {"input_tokens": 4, "cache_creation_input_tokens": 9, "cache_read_input_tokens": 7, "output_tokens": 3}
    received = bedrock.requests[-1]
    assert received["raw_path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
    assert received["body"] == BODY


async def test_invoke_model_with_response_stream_with_boto3(bedrock):
    answer = await asyncio.to_thread(runtime(bedrock.url).invoke_model_with_response_stream, modelId=MODEL, body=json.dumps(BODY))
    events = await asyncio.to_thread(lambda: [json.loads(event["chunk"]["bytes"]) for event in answer["body"]])
    assert [event["type"] for event in events][:3] == ["message_start", "content_block_start", "content_block_delta"]
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta") == "echo: hello there"
    assert events[-1]["type"] == "message_stop" and events[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] == 3
    assert bedrock.requests[-1]["raw_path"].endswith("/invoke-with-response-stream")


async def test_boto3_sees_the_fakes_refusals(bedrock):
    with pytest.raises(ClientError) as wrong:
        await asyncio.to_thread(runtime(bedrock.url, secret="wrong").invoke_model, modelId=MODEL, body=json.dumps(BODY))
    assert wrong.value.response["Error"]["Code"] == "InvalidSignatureException"
    with pytest.raises(ClientError) as invalid:
        await asyncio.to_thread(runtime(bedrock.url).invoke_model, modelId=MODEL, body=json.dumps({**BODY, "model": MODEL}))
    assert invalid.value.response["Error"]["Code"] == "ValidationException"
    assert "extraneous key [model]" in invalid.value.response["Error"]["Message"]
    bedrock.fail_next(Fault(error_after=2))
    answer = await asyncio.to_thread(runtime(bedrock.url).invoke_model_with_response_stream, modelId=MODEL, body=json.dumps(BODY))
    with pytest.raises(EventStreamError) as broken:
        await asyncio.to_thread(lambda: [event for event in answer["body"]])
    assert broken.value.response["Error"]["Code"] == "modelStreamErrorException"


async def test_anthropic_bedrock_client(bedrock):
    bedrock.cache_read = 5
    message = await asyncio.to_thread(
        claude(bedrock.url).messages.create, model=MODEL, max_tokens=1024, thinking={"type": "enabled", "budget_tokens": 512},
        messages=[{"role": "user", "content": "hello there"}],
    )  # fmt: skip
    assert (message.content[0].type, message.content[0].thinking, message.content[0].signature) == ("thinking", REASONING, SIGNATURE)
    assert message.content[1].text == "echo: hello there"
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens, message.usage.output_tokens) == (2, 5, 3)
    received = bedrock.requests[-1]
    assert received["raw_path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"  # this SDK leaves ':' unquoted
    assert received["body"]["anthropic_version"] and "model" not in received["body"]  # the SDK's own version string


async def test_anthropic_bedrock_client_streams(bedrock):
    bedrock.tool_use = {"name": "get_weather", "input": {"city": "Paris"}}

    def run():
        with claude(bedrock.url).messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "weather?"}],
                                                 tools=[{"name": "get_weather", "input_schema": {"type": "object"}}]) as stream:  # fmt: skip
            return stream.get_final_message()

    message = await asyncio.to_thread(run)
    assert message.stop_reason == "tool_use"
    assert (message.content[0].name, message.content[0].input) == ("get_weather", {"city": "Paris"})
    assert bedrock.requests[-1]["raw_path"].endswith("/invoke-with-response-stream")


async def test_anthropic_bedrock_client_with_a_wrong_secret_is_refused(bedrock):
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        await asyncio.to_thread(claude(bedrock.url, secret="wrong").messages.create, model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert "signature" in str(refused.value)
