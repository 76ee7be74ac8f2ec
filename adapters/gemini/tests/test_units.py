"""Small pieces: the model list, routes and keys, the channel's URLs and bodies."""

from __future__ import annotations

import orjson
import pytest

from gateway_core import AuthenticationError, BillingHints, InvalidRequestError, NotFoundError, endpoints
from gateway_core.model import ChatRequest, ImagePart, Message, ModelInfo, Role, TextPart, Usage
from gateway_gemini.channel import model_path, strip_version
from gateway_gemini.count_tokens import count_body_to_wire, count_request_from_wire, estimate_input_tokens, passthrough_count_body
from gateway_gemini.embeddings import embed_usage, passthrough_embed_body
from gateway_gemini.models_list import model_get, models_page
from gateway_gemini.protocol import GeminiProtocol, is_gemini_request

MODELS = [ModelInfo(id=name) for name in ("a-model", "b-model", "c-model")]


def test_models_page_and_tokens():
    first = models_page(MODELS, {"pageSize": "2"})
    assert [m["name"] for m in first["models"]] == ["models/a-model", "models/b-model"]
    second = models_page(MODELS, {"pageSize": "2", "pageToken": first["nextPageToken"]})
    assert [m["name"] for m in second["models"]] == ["models/c-model"] and "nextPageToken" not in second
    assert len(models_page(MODELS, {})["models"]) == 3
    with pytest.raises(InvalidRequestError):
        models_page(MODELS, {"pageSize": "many"})
    assert model_get(MODELS, "b-model")["name"] == "models/b-model"
    with pytest.raises(NotFoundError):
        model_get(MODELS, "B-MODEL")


def test_model_object_has_the_fields_sdks_read(examples):
    listed = examples.json("models_list.json")["models"][0]
    ours = models_page(MODELS, {})["models"][0]
    assert {"name", "version", "displayName", "description", "supportedGenerationMethods"} <= ours.keys() & listed.keys()


def test_render_models_lists_or_gets_the_model_the_call_names():
    protocol = GeminiProtocol()
    route = next(r for r in protocol.routes() if r.path == "/v1beta/models/{model:path}" and r.methods == ("GET",))
    call = protocol.parse(route, b"", {}, {}, {"model": "b-model"})
    assert orjson.loads(protocol.render_models(call, MODELS, {}, {}))["name"] == "models/b-model"
    listing = next(r for r in protocol.routes() if r.path == "/v1beta/models")
    call = protocol.parse(listing, b"", {}, {}, {})
    assert len(orjson.loads(protocol.render_models(call, MODELS, {}, {}))["models"]) == 3


def test_generate_content_caps_billing_by_max_output_tokens():
    protocol = GeminiProtocol()
    route = next(r for r in protocol.routes() if r.path == "/v1beta/models/{model}:generateContent")
    contents = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    def hints(body):
        return protocol.parse(route, orjson.dumps(body), {}, {}, {"model": "m"}).billing

    assert hints(contents | {"generationConfig": {"maxOutputTokens": 64}}) == BillingHints(max_output_tokens=64)
    assert hints(contents | {"generation_config": {"max_output_tokens": 64}}).max_output_tokens == 64
    assert hints(contents | {"generationConfig": {"maxOutputTokens": "64"}}).max_output_tokens == 64  # an int64 as a string
    for config in ({}, {"maxOutputTokens": 0}, {"maxOutputTokens": True}, {"temperature": 0.5}):
        assert hints(contents | {"generationConfig": config}) == BillingHints()
    assert hints(contents) == BillingHints()


def test_routes_put_methods_before_the_model_route():
    paths = [(r.path, r.methods) for r in GeminiProtocol().routes()]
    for version in ("/v1beta", "/v1"):
        methods = [i for i, (p, _) in enumerate(paths) if p.startswith(f"{version}/models/{{model}}:")]
        plain = paths.index((f"{version}/models/{{model:path}}", ("GET",)))
        assert len(methods) == 5 and max(methods) < plain
    shared = [r for r in GeminiProtocol().routes() if r.path == "/v1/models"]
    assert shared[0].match is is_gemini_request and shared[0].endpoint == endpoints.MODELS


def test_keys_from_header_query_or_bearer():
    protocol = GeminiProtocol()
    assert protocol.read_key({"x-goog-api-key": "k1"}, {"key": "k2"}) == "k1"
    assert protocol.read_key({}, {"key": "k2"}) == "k2"
    assert protocol.read_key({"authorization": "Bearer k3"}, {}) == "k3"
    with pytest.raises(AuthenticationError):
        protocol.read_key({}, {})
    with pytest.raises(AuthenticationError):
        protocol.read_key({"x-goog-api-key": "with space"}, {})


def test_claims():
    protocol = GeminiProtocol()
    assert protocol.claim("/v1beta/anything", {}, {}) == 3
    assert protocol.claim("/v1/models/x:predict", {}, {}) == 3
    assert protocol.claim("/v1/nothing", {"x-goog-api-key": "k"}, {}) == 3
    assert protocol.claim("/v1/chat/nothing", {}, {}) == 0


def test_channel_urls():
    assert strip_version("https://generativelanguage.googleapis.com/v1beta/") == "https://generativelanguage.googleapis.com"
    assert strip_version("https://proxy.example/gemini/v1") == "https://proxy.example/gemini"
    assert strip_version("https://generativelanguage.googleapis.com") == "https://generativelanguage.googleapis.com"
    assert model_path("models/gemini-2.5-pro") == "gemini-2.5-pro"
    assert model_path("a/b?c") == "a%2Fb%3Fc"


def test_count_tokens_bodies(examples):
    body = examples.json("count_tokens_request.json")
    assert passthrough_count_body(body, "gemini-up")["generateContentRequest"]["model"] == "models/gemini-up"
    request = count_request_from_wire(body, "gemini-x")
    assert request.system == (TextPart("You are a helpful assistant."),)
    wire = count_body_to_wire(request, "gemini-up")
    assert wire["generateContentRequest"]["model"] == "models/gemini-up"
    assert wire["generateContentRequest"]["contents"] == body["generateContentRequest"]["contents"]
    assert count_request_from_wire({"contents": [{"parts": [{"text": "hi"}]}]}, "m").messages[0].parts == (TextPart("hi"),)
    with pytest.raises(InvalidRequestError):
        count_request_from_wire({}, "m")


def test_local_estimate():
    request = ChatRequest(model="m", messages=(Message(Role.USER, (TextPart("x" * 40), ImagePart(data="AA"))),), system=(TextPart("y" * 8),))
    assert estimate_input_tokens(request) == 12 + 258


def test_embedding_bodies_and_usage(examples):
    body = examples.json("batch_embed_request.json")
    mapped = passthrough_embed_body(body, "gemini-embedding-up")
    assert {r["model"] for r in mapped["requests"]} == {"models/gemini-embedding-up"}
    assert mapped["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert embed_usage({"embeddings": []}, body) == (Usage(input_tokens=(len("What is the meaning of life?") + len("How much wood would a woodchuck chuck?") + 3) // 4), True)
    assert embed_usage({"usageMetadata": {"promptTokenCount": 9}}, body) == (Usage(input_tokens=9), False)  # reported: no estimate
    single = {"model": "models/x", "content": {"parts": [{"text": "abcd"}]}}
    assert passthrough_embed_body(single, "y")["model"] == "models/y" and embed_usage({}, single)[0].input_tokens == 1


def test_embed_bodies_become_core_requests_and_answers(examples):
    from gateway_core.model import EmbeddingsResponse
    from gateway_gemini.embeddings import embed_request_from_wire, embed_response_to_wire

    single = {"content": {"parts": [{"text": "line one"}, {"text": "line two"}]}, "outputDimensionality": 16, "taskType": "CLUSTERING"}
    request = embed_request_from_wire(single, "embedContent", "m")
    assert (request.model, request.inputs, request.dimensions) == ("m", ("line one\nline two",), 16)
    batch = embed_request_from_wire(examples.json("batch_embed_request.json"), "batchEmbedContents", "m")
    assert len(batch.inputs) == len(examples.json("batch_embed_request.json")["requests"])
    answer = EmbeddingsResponse(model="m", vectors=((0.5, 1.0), (0.25, 0.0)))
    assert embed_response_to_wire(answer, "batchEmbedContents") == {"embeddings": [{"values": [0.5, 1.0]}, {"values": [0.25, 0.0]}]}
    assert embed_response_to_wire(answer, "embedContent") == {"embedding": {"values": [0.5, 1.0]}}
