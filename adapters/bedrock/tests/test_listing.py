"""Listing a bedrock channel's models from Bedrock's control plane: the fake's
``GET /foundation-models`` and ``GET /inference-profiles`` are proven first with
boto3's ``bedrock`` client; then the channel type lists the text models callable on
demand and the active cross-region profiles of text models, signed for the service
``bedrock``, and ``relaygate channel models NAME --fetch`` shows them."""

from __future__ import annotations

import asyncio

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from gateway_bedrock.channel import BedrockChannel
from gateway_bedrock.fake_upstream import ACCESS_KEY_ID, BEARER_KEY, IAM_KEY, SECRET_ACCESS_KEY
from gateway_bedrock.listing import control_url
from gateway_core.commands.cli import main
from gateway_core.records import ChannelRecord
from gateway_core.testing.listing import upstream_models

LISTED = [
    "anthropic.claude-3-haiku-20240307-v1:0", "amazon.nova-pro-v1:0",
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "us.amazon.nova-pro-v1:0", "eu.anthropic.claude-3-haiku-20240307-v1:0",
]  # fmt: skip


def control(url: str, secret: str = SECRET_ACCESS_KEY):
    return boto3.client(
        "bedrock", region_name="us-east-1", endpoint_url=url, aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )  # fmt: skip


async def test_the_fakes_control_plane_with_boto3(bedrock):
    listed = await asyncio.to_thread(control(bedrock.url).list_foundation_models, byOutputModality="TEXT")
    assert [model["modelId"] for model in listed["modelSummaries"]][:2] == ["anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-3-haiku-20240307-v1:0"]
    assert all(model["outputModalities"] == ["TEXT"] for model in listed["modelSummaries"])
    pages = await asyncio.to_thread(lambda: list(control(bedrock.url).get_paginator("list_inference_profiles").paginate()))
    assert len(pages) == 3 and pages[0]["nextToken"] == "page+2"  # boto3 sent the token back quoted, signed
    assert sum(len(page["inferenceProfileSummaries"]) for page in pages) == 5
    with pytest.raises(ClientError) as refused:
        await asyncio.to_thread(control(bedrock.url, secret="wrong").list_foundation_models)
    assert refused.value.response["Error"]["Code"] == "InvalidSignatureException"


@pytest.mark.parametrize("key", [IAM_KEY, BEARER_KEY])
async def test_the_channel_type_lists_text_models_and_profiles(bedrock, key):
    listed = await upstream_models(BedrockChannel(), bedrock.url, key, models=("amazon.nova-pro-v1:0",), settings={"region": "us-east-1"})
    assert list(listed.models) == LISTED
    assert list(listed.new) == [model for model in LISTED if model != "amazon.nova-pro-v1:0"]
    assert [request["raw_path"] for request in bedrock.requests] == [
        "/foundation-models?byOutputModality=TEXT", "/inference-profiles?maxResults=1000",
        "/inference-profiles?maxResults=1000&nextToken=page%2B2", "/inference-profiles?maxResults=1000&nextToken=page%2B4",
    ]  # fmt: skip


async def test_a_refused_key_is_said(bedrock):
    listed = await upstream_models(BedrockChannel(), bedrock.url, "AKIAFAKEBEDROCK00001:wrong", settings={"region": "us-east-1"})
    assert not listed.ok and "403" in listed.message and "signature" in listed.message and "wrong" not in listed.message


def test_the_control_plane_url_is_derived_from_the_runtimes():
    def channel(base_url: str, **settings: str) -> ChannelRecord:
        return ChannelRecord(id=1, name="c", type="bedrock", base_url=base_url, api_keys=("k",), models=(), model_map={}, groups=("default",), settings=settings)

    assert control_url(channel("https://bedrock-runtime.{region}.amazonaws.com")) == "https://bedrock.{region}.amazonaws.com"
    assert control_url(channel("https://bedrock-runtime-fips.us-east-1.amazonaws.com")) == "https://bedrock-fips.us-east-1.amazonaws.com"
    assert control_url(channel("http://127.0.0.1:9000")) == "http://127.0.0.1:9000"
    assert control_url(channel("https://vpce-1.bedrock-runtime.x", control_url="https://vpce-2.bedrock.x/")) == "https://vpce-2.bedrock.x"


async def test_channel_models_fetch_through_the_cli(seed, bedrock, capsys):
    seed.channel("aws", type="bedrock", base_url=bedrock.url, models=["amazon.nova-pro-v1:0"], api_keys=[IAM_KEY], settings={"region": "us-east-1"})
    db = seed.config.db_path
    capsys.readouterr()

    def cli(*argv: str) -> tuple[int, str]:
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        assert SECRET_ACCESS_KEY not in out + err
        return status, out + err

    status, out = await asyncio.to_thread(cli, "channel", "models", "aws", "--fetch")
    assert status == 0 and out.splitlines()[0].startswith("aws: the upstream lists 6 models, 5 not yet served by the channel"), out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if line.strip()}
    assert list(rows) == LISTED and rows["amazon.nova-pro-v1:0"] == "served"
