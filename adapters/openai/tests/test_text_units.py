"""The pure parts of legacy completions, moderations and rerank, against recorded
wire examples: a completions stream decoded into core events that keep the stream
contract, the usage read from Jina's and Cohere's rerank answers, and the checks
of each call's body."""

from __future__ import annotations

import pytest

from gateway_core import InvalidRequestError, RouteSpec, endpoints
from gateway_core.model import PartDelta, StreamFinish, StreamStart, Usage, UsageReport
from gateway_core.request.stream_contract import StreamContract
from gateway_core.testing import Examples
from gateway_openai.chat_stream import FrameDecoder
from gateway_openai.completions import as_chat_chunk, completions_call, prompt_count
from gateway_openai.moderations import DEFAULT_MODEL, moderation_call, moderation_usage
from gateway_openai.rerank import rerank_call, rerank_usage

examples = Examples.beside(__file__)
COMPLETIONS = RouteSpec("/v1/completions", endpoints.COMPLETIONS)
MODERATIONS = RouteSpec("/v1/moderations", endpoints.MODERATIONS)
RERANK = RouteSpec("/v1/rerank", endpoints.RERANK)


def test_a_completions_stream_decodes_into_events_that_keep_the_contract():
    decoder, contract = FrameDecoder(as_chat_chunk), StreamContract("openai")
    events = []
    frames = [decoder.decode(raw) for raw in examples.frames("completions_stream_usage.sse")]
    for frame in frames:
        contract.check(frame)
        events += frame.events
    assert frames[-1].terminal and frames[-1].raw.startswith(b"data: [DONE]")
    assert isinstance(events[0], StreamStart) and events[0].id == "cmpl-8aQ2vTnR5xLm0pWk3ZcY7uJd"
    assert "".join(e.text for e in events if isinstance(e, PartDelta)) == "\n\nThis is a test."
    assert [type(e) for e in events[-2:]] == [StreamFinish, UsageReport]
    assert events[-1].usage == Usage(input_tokens=5, output_tokens=7)


def test_completion_calls_reserve_the_cap_of_every_completion_asked_for():
    call = completions_call(COMPLETIONS, {"model": "m", "prompt": ["a", "b"], "n": 2, "best_of": 3, "max_tokens": 10, "stream": True})
    assert (call.wire, call.stream, call.billing.max_output_tokens, call.options) == ("openai.completions", True, 60, {"include_usage": False})
    assert completions_call(COMPLETIONS, {"model": "m", "prompt": "a"}).billing.max_output_tokens is None


@pytest.mark.parametrize(("prompt", "count"), [("", 1), ("hi", 1), (["a", "b"], 2), ([1, 2, 3], 1), ([[1], [2, 3]], 2)])
def test_prompt_shapes(prompt, count):
    assert prompt_count(prompt) == count


@pytest.mark.parametrize("prompt", [None, [], 3, [1, "a"], [[]], [[1], "a"], {"text": "a"}])
def test_prompts_of_no_shape_are_refused(prompt):
    with pytest.raises(InvalidRequestError) as caught:
        prompt_count(prompt)
    assert caught.value.param == "prompt"


def test_moderations_default_model_and_estimated_usage():
    call = moderation_call(MODERATIONS, {"input": ["abcd", "efgh"]})
    assert call.model == DEFAULT_MODEL == moderation_call(MODERATIONS, {"model": None, "input": "x"}).model
    parts = [{"type": "text", "text": "x" * 9}, {"type": "image_url", "image_url": {"url": "https://example.com/" + "y" * 400}}]
    usage, estimated = moderation_usage({"id": "modr-1", "results": []}, {"input": parts})
    assert usage == Usage(input_tokens=3) and estimated is not None and estimated.estimated  # the URL is no text
    reported, estimated = moderation_usage({"usage": {"prompt_tokens": 7, "total_tokens": 7}}, {"input": "x"})
    assert reported == Usage(input_tokens=7) and estimated is None


def test_rerank_usage_from_jina_and_cohere_answers():
    body = {"model": "r", "query": "capital of France", "documents": ["Berlin is the capital of Germany.", {"text": "Paris is the capital of France."}]}
    assert rerank_call(RERANK, body).wire == "rerank"
    usage, estimated = rerank_usage(examples.json("rerank_answer_jina.json"), body)
    assert usage == Usage(input_tokens=38) and estimated is None
    usage, estimated = rerank_usage(examples.json("rerank_answer_cohere.json"), body)
    chars = len(body["query"]) + len(body["documents"][0]) + len(body["documents"][1]["text"])
    assert usage == Usage(input_tokens=-(-chars // 4)) and estimated is not None and estimated.estimated
    assert rerank_usage({"meta": {"billed_units": {"input_tokens": 11, "search_units": 1}}}, body)[0] == Usage(input_tokens=11)
