"""``/v1/completions`` (legacy, plain and streamed), ``/v1/moderations`` and
``/v1/audio/translations`` through the official ``openai`` SDK over real HTTP, to
a fake OpenAI upstream speaking the real wire format: what reaches the upstream,
what comes back, the usage row, and the errors."""

from __future__ import annotations

import hashlib

import httpx2 as httpx
import openai
import pytest

from gateway_openai.fake_text import FLAGGED_WORD, TRANSLATION
from gateway_openai.fake_upstream import Fault

INSTRUCT, INSTRUCT_UP = "instruct-test", "gpt-3.5-turbo-instruct"
MODERATION, MODERATION_UP = "omni-moderation-latest", "omni-moderation-2024-09-26"
WHISPER, WHISPER_UP = "whisper-test", "whisper-1"
CLAUDE = "claude-test"
AUDIO = b"ID3" + bytes(range(256)) * 64


@pytest.fixture
def gateway_key(seed, upstream):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("oai", type="openai", base_url=upstream.url + "/v1", models=[INSTRUCT, MODERATION, WHISPER],
                 model_map={INSTRUCT: INSTRUCT_UP, MODERATION: MODERATION_UP, WHISPER: WHISPER_UP})  # fmt: skip
    seed.channel("claude", type="anthropic", base_url="http://127.0.0.1:9", models=[CLAUDE])
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
def client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


def last_row(seed) -> dict:
    return seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]


# --- completions -----------------------------------------------------------------


async def test_completion_goes_through_with_the_model_mapped(client, upstream, gateway_key, seed):
    completion = await client.completions.create(model=INSTRUCT, prompt="say this is a test", max_tokens=7, temperature=0, suffix="!")
    assert completion.object == "text_completion" and completion.choices[0].text == "echo: say this is a test"
    assert completion.choices[0].finish_reason == "stop"
    received = upstream.requests[-1]
    assert received["path"] == "/v1/completions" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert received["body"] == {"model": INSTRUCT_UP, "prompt": "say this is a test", "max_tokens": 7, "temperature": 0, "suffix": "!"}
    assert gateway_key not in str(received["headers"])
    row = last_row(seed)
    assert (row["endpoint"], row["model"], row["upstream_model"], row["status"], row["end_reason"]) == ("completions", INSTRUCT, INSTRUCT_UP, 200, "done")
    assert (row["input_tokens"], row["output_tokens"], row["estimated"], row["stream"]) == (
        completion.usage.prompt_tokens, completion.usage.completion_tokens, 0, 0,
    )  # fmt: skip


async def test_completion_of_several_prompts(client):
    completion = await client.completions.create(model=INSTRUCT, prompt=["one", "two"])
    assert [c.text for c in completion.choices] == ["echo: one", "echo: two"]


async def test_streamed_completion_asks_for_usage_and_hides_it_from_a_client_that_did_not(client, upstream, seed):
    stream = await client.completions.create(model=INSTRUCT, prompt="stream me please", stream=True)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "echo: stream me please"
    assert all(c.object == "text_completion" and c.choices for c in chunks)  # no usage-only chunk
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert upstream.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    row = last_row(seed)
    assert (row["endpoint"], row["stream"], row["end_reason"], row["estimated"]) == ("completions", 1, "done", 0)
    assert (row["input_tokens"], row["output_tokens"]) == (len("stream me please") // 4 + 1, 4)


async def test_streamed_completion_with_usage_for_a_client_that_asked(client, seed):
    stream = await client.completions.create(model=INSTRUCT, prompt="count me", stream=True, stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 3
    row = last_row(seed)
    assert (row["output_tokens"], row["estimated"]) == (3, 0)


async def test_streamed_completion_broken_by_the_upstream_ends_with_an_error(client, upstream, seed):
    upstream.fail_next(Fault(drop_after=2))
    stream = await client.completions.create(model=INSTRUCT, prompt="a b c d e f", stream=True)
    with pytest.raises(openai.APIError):
        async for _ in stream:
            pass
    row = last_row(seed)
    assert row["end_reason"] == "upstream_error" and row["estimated"] == 1


async def test_completion_without_usage_is_counted_from_its_text(client, upstream, seed):
    upstream.report_usage = False
    completion = await client.completions.create(model=INSTRUCT, prompt="x" * 40)
    assert completion.usage is None
    row = last_row(seed)
    text = completion.choices[0].text
    assert (row["estimated"], row["output_tokens"]) == (1, -(-len(text) // 4))  # the text, not the JSON around it


async def test_completion_errors_are_400s(client, upstream):
    for body, param in (({"prompt": "x"}, "model"), ({"model": INSTRUCT}, "prompt"), ({"model": INSTRUCT, "prompt": [1, "a"]}, "prompt"),
                        ({"model": INSTRUCT, "prompt": "x", "n": 0}, "n"), ({"model": INSTRUCT, "prompt": "x", "stream": "yes"}, "stream")):  # fmt: skip
        with pytest.raises(openai.BadRequestError) as caught:
            await client.post("/completions", body=body, cast_to=httpx.Response)
        assert caught.value.param == param
    assert upstream.requests == []


async def test_completion_of_an_unknown_model_or_a_model_without_completions(client):
    with pytest.raises(openai.BadRequestError) as caught:
        await client.completions.create(model="nobody-knows", prompt="x")
    assert caught.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError) as caught:
        await client.completions.create(model=CLAUDE, prompt="x")
    assert caught.value.code == "unsupported_endpoint" and "completions" in caught.value.message


async def test_upstream_refusal_comes_back_in_openai_shape(client, upstream):
    upstream.fail_next(Fault(status=400, body={"error": {"message": "max_tokens is too large", "type": "invalid_request_error", "param": "max_tokens", "code": None}}))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.completions.create(model=INSTRUCT, prompt="x", max_tokens=10**6)
    assert "max_tokens is too large" in caught.value.message


# --- moderations -----------------------------------------------------------------


async def test_moderation_of_texts(client, upstream, seed):
    result = await client.moderations.create(model=MODERATION, input=["a sunny day", f"I will {FLAGGED_WORD} the process"])
    assert [r.flagged for r in result.results] == [False, True]
    assert result.results[1].categories.violence is True and result.results[1].category_scores.violence > 0.5
    assert upstream.requests[-1]["body"] == {"model": MODERATION_UP, "input": ["a sunny day", f"I will {FLAGGED_WORD} the process"]}
    row = last_row(seed)
    chars = len("a sunny day") + len(f"I will {FLAGGED_WORD} the process")
    assert (row["endpoint"], row["model"], row["upstream_model"], row["status"]) == ("moderations", MODERATION, MODERATION_UP, 200)
    assert (row["input_tokens"], row["output_tokens"], row["estimated"]) == (-(-chars // 4), 0, 1)  # OpenAI reports no usage


async def test_moderation_without_a_model_is_for_the_default_model(client, upstream, seed):
    result = await client.moderations.create(input="hello")
    assert result.results[0].flagged is False
    assert upstream.requests[-1]["body"] == {"model": MODERATION_UP, "input": "hello"}
    assert last_row(seed)["model"] == MODERATION


async def test_moderation_of_text_and_image_parts(client, upstream):
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]
    result = await client.moderations.create(model=MODERATION, input=parts)
    assert [r.category_applied_input_types.violence for r in result.results] == [["text"], ["image"]]
    assert upstream.requests[-1]["body"]["input"] == parts


async def test_moderation_errors(client, upstream):
    for body, param in (({"input": 5}, "input"), ({"input": []}, "input"), ({"input": [{"type": "audio"}]}, "input"),
                        ({"model": "", "input": "x"}, "model")):  # fmt: skip
        with pytest.raises(openai.BadRequestError) as caught:
            await client.post("/moderations", body=body, cast_to=httpx.Response)
        assert caught.value.param == param
    assert upstream.requests == []
    with pytest.raises(openai.NotFoundError) as caught:
        await client.moderations.create(model=CLAUDE, input="x")
    assert caught.value.code == "unsupported_endpoint"


# --- translations ----------------------------------------------------------------


TRANSLATIONS_DEPRECATED = pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # the SDK marks the method so


@TRANSLATIONS_DEPRECATED
@pytest.mark.parametrize("response_format", ["json", "verbose_json", "text", "srt", "vtt"])
async def test_translation_streams_the_file_and_passes_every_format_through(client, upstream, tmp_path, response_format, seed):
    audio = tmp_path / "rede.mp3"
    audio.write_bytes(AUDIO)
    result = await client.audio.translations.create(model=WHISPER, file=audio.open("rb"), response_format=response_format, prompt="Guten Tag")
    text = result if isinstance(result, str) else result.text
    assert TRANSLATION in text
    if response_format == "verbose_json":
        assert result.duration == 12.5 and result.segments[0].text == TRANSLATION
    received = upstream.requests[-1]
    assert received["path"] == "/v1/audio/translations" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert received["body"]["fields"] == {"model": WHISPER_UP, "prompt": "Guten Tag", "response_format": response_format}
    assert received["body"]["files"] == [{"field": "file", "filename": "rede.mp3", "content_type": "audio/mpeg", "size": len(AUDIO),
                                          "sha256": hashlib.sha256(AUDIO).hexdigest()}]  # fmt: skip
    row = last_row(seed)
    assert (row["endpoint"], row["status"], row["upstream_model"], row["stream"]) == ("audio.translations", 200, WHISPER_UP, 0)
    assert row["estimated"] == (1 if response_format in ("json", "text") else 0)  # only a duration or cues tell the length


@TRANSLATIONS_DEPRECATED
async def test_translation_errors(client, upstream):
    with pytest.raises(openai.BadRequestError) as caught:
        await client.post("/audio/translations", body=None, files=[("file", ("a.mp3", AUDIO, "audio/mpeg"))], cast_to=httpx.Response,
                          options={"headers": {"Content-Type": "multipart/form-data"}})  # fmt: skip
    assert caught.value.param == "model"
    with pytest.raises(openai.NotFoundError) as caught:
        await client.audio.translations.create(model=CLAUDE, file=("a.wav", AUDIO, "audio/wav"))
    assert caught.value.code == "unsupported_endpoint"
    assert upstream.requests == []
