"""Where an azure channel sends each call: Azure's two path styles from OpenAI's paths,
the api-version, the base URL as stored, the endpoints served."""

from __future__ import annotations


import pytest

from gateway_azure.channel import AzureChannel
from gateway_core import ChannelRecord, Target, endpoints

BASE = "https://res.openai.azure.com"


def target(deployment: str = "my-dep", **settings) -> Target:
    channel = ChannelRecord(id=1, name="az", type="azure", base_url=BASE, api_keys=("k",), models=("m",), model_map={},
                            groups=("default",), settings=settings)  # fmt: skip
    return Target(channel=channel, api_key="k", upstream_model=deployment)


@pytest.mark.parametrize(
    ("path", "deployments", "v1"),
    [
        ("/v1/chat/completions", "/openai/deployments/my-dep/chat/completions", "/openai/v1/chat/completions"),
        ("/v1/embeddings", "/openai/deployments/my-dep/embeddings", "/openai/v1/embeddings"),
        ("/v1/images/generations", "/openai/deployments/my-dep/images/generations", "/openai/v1/images/generations"),
        ("/v1/images/edits", "/openai/deployments/my-dep/images/edits", "/openai/v1/images/edits"),
        ("/v1/audio/speech", "/openai/deployments/my-dep/audio/speech", "/openai/v1/audio/speech"),
        ("/v1/audio/transcriptions", "/openai/deployments/my-dep/audio/transcriptions", "/openai/v1/audio/transcriptions"),
        ("/v1/audio/translations", "/openai/deployments/my-dep/audio/translations", "/openai/v1/audio/translations"),
        ("/v1/completions", "/openai/deployments/my-dep/completions", "/openai/v1/completions"),
        ("/v1/responses", "/openai/responses", "/openai/v1/responses"),
        ("/v1/responses/resp_1%2F2", "/openai/responses/resp_1%2F2", "/openai/v1/responses/resp_1%2F2"),
    ],
)
def test_both_path_styles(path, deployments, v1):
    channel = AzureChannel()
    assert channel.upstream_url(target(), path) == f"{BASE}{deployments}?api-version=2024-10-21"
    assert channel.upstream_url(target(api_version="2025-04-01-preview"), path) == f"{BASE}{deployments}?api-version=2025-04-01-preview"
    assert channel.upstream_url(target(path_style="v1"), path) == f"{BASE}{v1}"  # v1 needs no api-version
    assert channel.upstream_url(target(path_style="v1", api_version="preview"), path) == f"{BASE}{v1}?api-version=preview"


def test_a_deployment_name_is_one_path_segment():
    url = AzureChannel().upstream_url(target("team a/b"), "/v1/chat/completions")
    assert url == f"{BASE}/openai/deployments/team%20a%2Fb/chat/completions?api-version=2024-10-21"


@pytest.mark.parametrize("given", [BASE, BASE + "/", BASE + "/openai", BASE + "/openai/", BASE + "/openai/v1/"])
def test_the_base_url_is_the_resource_endpoint(given):
    assert AzureChannel().normalize_base_url(given) == BASE


def test_the_endpoints_azure_serves():
    channel = AzureChannel()
    served = {e for e in (endpoints.CHAT, endpoints.RESPONSES, endpoints.EMBEDDINGS, endpoints.IMAGES_GENERATIONS,
                          endpoints.AUDIO_SPEECH, endpoints.AUDIO_TRANSCRIPTIONS, endpoints.COMPLETIONS) if channel.wire(e)}  # fmt: skip
    assert len(served) == 7
    assert channel.wire(endpoints.MODERATIONS) is None and channel.wire(endpoints.REALTIME) is None
