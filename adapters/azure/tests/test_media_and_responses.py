"""The rest of what Azure serves, through the gateway to an azure channel with the official
``openai`` SDK: images, speech and transcriptions (an upload streamed to its deployment's
path), and the Responses API — converted to chat by default, forwarded to
``/openai/responses`` when the channel says Azure serves it."""

from __future__ import annotations

import openai
import pytest

from gateway_openai.fake_media import TRANSCRIPT

from .fake_azure import AZURE_KEY

CHAT, NATIVE, IMAGE, TTS, WHISPER = "gpt-4o-mini", "gpt-4.1-native", "gpt-image-1", "gpt-4o-mini-tts", "whisper-1"
DEPLOYMENTS = {CHAT: "chat-dep", NATIVE: "chat-dep", IMAGE: "image-dep", TTS: "tts-dep", WHISPER: "whisper-dep"}


@pytest.fixture
def gateway_key(seed, azure):
    azure.deployments.update({"image-dep": "gpt-image-1", "tts-dep": "gpt-4o-mini-tts", "whisper-dep": "whisper"})
    _, secret = seed.key(seed.user("alice"))
    seed.channel("az", type="azure", base_url=azure.url, api_keys=[AZURE_KEY], models=[CHAT, IMAGE, TTS, WHISPER],
                 model_map=DEPLOYMENTS)  # fmt: skip
    seed.channel("az-responses", type="azure", base_url=azure.url, api_keys=[AZURE_KEY], models=[NATIVE], model_map=DEPLOYMENTS,
                 settings={"responses": True, "api_version": "2025-04-01-preview"})  # fmt: skip
    return secret


@pytest.fixture
def client(start_gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)


async def test_images_speech_and_transcriptions_at_their_deployments(client, azure):
    images = await client.images.generate(model=IMAGE, prompt="a lighthouse", n=2, response_format="b64_json")
    assert len(images.data) == 2
    assert azure.requests[-1]["path"] == "/openai/deployments/image-dep/images/generations?api-version=2024-10-21"

    speech = await client.audio.speech.create(model=TTS, voice="alloy", input="Hello")
    assert speech.content.startswith(b"AUDIO0:Hello|")
    assert azure.requests[-1]["path"] == "/openai/deployments/tts-dep/audio/speech?api-version=2024-10-21"

    text = await client.audio.transcriptions.create(model=WHISPER, file=("a.mp3", b"ID3" + bytes(512), "audio/mpeg"))
    assert text.text == TRANSCRIPT
    sent = azure.requests[-1]
    assert sent["path"] == "/openai/deployments/whisper-dep/audio/transcriptions?api-version=2024-10-21"
    assert sent["body"]["fields"]["model"] == "whisper-dep" and sent["headers"]["api-key"] == AZURE_KEY


async def test_responses_converted_to_chat_by_default(client, azure):
    answer = await client.responses.create(model=CHAT, input="hello")
    assert answer.output_text == "echo: hello"
    assert azure.requests[-1]["path"] == "/openai/deployments/chat-dep/chat/completions?api-version=2024-10-21"


async def test_responses_forwarded_when_azure_serves_them(client, azure):
    answer = await client.responses.create(model=NATIVE, input="hello")
    assert answer.output_text
    sent = azure.requests[-1]
    assert sent["path"] == "/openai/responses?api-version=2025-04-01-preview" and sent["body"]["model"] == "chat-dep"
    stream = await client.responses.create(model=NATIVE, input="streamed", stream=True)
    kinds = [event.type async for event in stream]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
