"""One driver per client protocol, each through its official SDK: OpenAI chat completions
and Responses (``openai``), Anthropic Messages (``anthropic``), Gemini generateContent
(``google-genai``). Each asks a text, streams one, runs a tool round trip (``get_weather``
called, ``sunny`` sent back) and sends an image, answering what the client saw: the text
and the tokens the client was told ``(input, output)``."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from .world import CITY, PNG, PNG_B64, PROTOCOL_NAMES, Kind, World

Answer = tuple[str, tuple[int, int] | None]
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


class Chat:
    name = "chat"

    def __init__(self, world: World) -> None:
        self.client = openai.OpenAI(base_url=world.gateway.url + "/v1", api_key=world.secret, max_retries=0)

    def ask(self, model: str, text: str) -> Answer:
        answer = self.client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
        assert answer.usage is not None
        return str(answer.choices[0].message.content), (answer.usage.prompt_tokens, answer.usage.completion_tokens)

    def stream(self, model: str, text: str) -> Answer:
        chunks = list(self.client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}], stream=True,
                                                          stream_options={"include_usage": True}))  # fmt: skip
        usage = chunks[-1].usage
        assert usage is not None and len(chunks) > 2
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), (usage.prompt_tokens, usage.completion_tokens)

    def tool_round_trip(self, world: World, kind: Kind, model: str) -> str:
        tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}}]
        messages: list[Any] = [{"role": "user", "content": "weather in Paris?"}]
        kind.call_tool(world.fake(kind), True)
        try:
            answer = self.client.chat.completions.create(model=model, messages=messages, tools=tools)
        finally:
            kind.call_tool(world.fake(kind), False)
        assert answer.choices[0].finish_reason == "tool_calls"
        call: Any = answer.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", CITY)
        messages += [answer.choices[0].message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
        final = self.client.chat.completions.create(model=model, messages=messages, tools=tools)
        return str(final.choices[0].message.content)

    def image(self, model: str, text: str) -> str:
        content: Any = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_B64}}]
        answer = self.client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}])
        return str(answer.choices[0].message.content)

    def fail(self, model: str) -> None:
        self.client.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}])


class Responses:
    name = "responses"

    def __init__(self, world: World) -> None:
        self.client = openai.OpenAI(base_url=world.gateway.url + "/v1", api_key=world.secret, max_retries=0)

    def ask(self, model: str, text: str) -> Answer:
        answer = self.client.responses.create(model=model, input=text)
        assert answer.usage is not None
        return answer.output_text, (answer.usage.input_tokens, answer.usage.output_tokens)

    def stream(self, model: str, text: str) -> Answer:
        events = list(self.client.responses.create(model=model, input=text, stream=True))
        deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
        assert events[-1].type == "response.completed" and deltas
        usage = events[-1].response.usage
        assert usage is not None
        return "".join(deltas), (usage.input_tokens, usage.output_tokens)

    def tool_round_trip(self, world: World, kind: Kind, model: str) -> str:
        tools: Any = [{"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA, "strict": False}]
        items: list[Any] = [{"role": "user", "content": "weather in Paris?"}]
        kind.call_tool(world.fake(kind), True)
        try:
            answer = self.client.responses.create(model=model, input=items, tools=tools)
        finally:
            kind.call_tool(world.fake(kind), False)
        (call,) = [item for item in answer.output if item.type == "function_call"]
        assert (call.name, json.loads(call.arguments)) == ("get_weather", CITY)
        items += [call.model_dump(exclude_none=True), {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
        return self.client.responses.create(model=model, input=items, tools=tools).output_text

    def image(self, model: str, text: str) -> str:
        content: Any = [{"type": "input_text", "text": text}, {"type": "input_image", "image_url": "data:image/png;base64," + PNG_B64, "detail": "auto"}]
        return self.client.responses.create(model=model, input=[{"role": "user", "content": content}]).output_text

    def fail(self, model: str) -> None:
        self.client.responses.create(model=model, input="x")


class Messages:
    name = "messages"

    def __init__(self, world: World) -> None:
        self.client = anthropic.Anthropic(base_url=world.gateway.url, api_key=world.secret, max_retries=0)

    def ask(self, model: str, text: str) -> Answer:
        message = self.client.messages.create(model=model, max_tokens=100, messages=[{"role": "user", "content": text}])
        return _text_of(message), (message.usage.input_tokens, message.usage.output_tokens)

    def stream(self, model: str, text: str) -> Answer:
        with self.client.messages.stream(model=model, max_tokens=100, messages=[{"role": "user", "content": text}]) as stream:
            said = "".join(stream.text_stream)
            final = stream.get_final_message()
        return said, (final.usage.input_tokens, final.usage.output_tokens)

    def tool_round_trip(self, world: World, kind: Kind, model: str) -> str:
        tools: Any = [{"name": "get_weather", "input_schema": WEATHER_SCHEMA}]
        messages: list[Any] = [{"role": "user", "content": "weather in Paris?"}]
        kind.call_tool(world.fake(kind), True)
        try:
            message = self.client.messages.create(model=model, max_tokens=100, tools=tools, messages=messages)
        finally:
            kind.call_tool(world.fake(kind), False)
        (use,) = [block for block in message.content if block.type == "tool_use"]
        assert (message.stop_reason, use.name, use.input) == ("tool_use", "get_weather", CITY)
        messages += [{"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}]  # fmt: skip
        return _text_of(self.client.messages.create(model=model, max_tokens=100, tools=tools, messages=messages))

    def image(self, model: str, text: str) -> str:
        content: Any = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}, {"type": "text", "text": text}]
        return _text_of(self.client.messages.create(model=model, max_tokens=100, messages=[{"role": "user", "content": content}]))

    def fail(self, model: str) -> None:
        self.client.messages.create(model=model, max_tokens=10, messages=[{"role": "user", "content": "x"}])


class Gemini:
    name = "gemini"

    def __init__(self, world: World) -> None:
        self.client = genai.Client(api_key=world.secret, http_options=types.HttpOptions(base_url=world.gateway.url, api_version="v1beta"))

    def ask(self, model: str, text: str) -> Answer:
        response = self.client.models.generate_content(model=model, contents=text)
        return str(response.text), _tokens(response.usage_metadata)

    def stream(self, model: str, text: str) -> Answer:
        chunks = list(self.client.models.generate_content_stream(model=model, contents=text))
        assert len(chunks) > 1
        return "".join(c.text or "" for c in chunks), _tokens(chunks[-1].usage_metadata)

    def tool_round_trip(self, world: World, kind: Kind, model: str) -> str:
        declaration = types.FunctionDeclaration(name="get_weather", parameters_json_schema=WEATHER_SCHEMA)
        config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])],
                                             automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))  # fmt: skip
        contents: list[Any] = [types.Content(role="user", parts=[types.Part.from_text(text="weather in Paris?")])]
        kind.call_tool(world.fake(kind), True)
        try:
            response = self.client.models.generate_content(model=model, contents=contents, config=config)
        finally:
            kind.call_tool(world.fake(kind), False)
        (call,) = response.function_calls or []
        assert (call.name, call.args) == ("get_weather", CITY)
        assert response.candidates and response.candidates[0].content
        contents += [response.candidates[0].content,
                     types.Content(role="user", parts=[types.Part.from_function_response(name="get_weather", response={"result": "sunny"})])]  # fmt: skip
        return str(self.client.models.generate_content(model=model, contents=contents, config=config).text)

    def image(self, model: str, text: str) -> str:
        return str(self.client.models.generate_content(model=model, contents=[types.Part.from_bytes(data=PNG, mime_type="image/png"), text]).text)

    def fail(self, model: str) -> None:
        self.client.models.generate_content(model=model, contents="x")


def _text_of(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def _tokens(usage: Any) -> tuple[int, int] | None:
    if usage is None or usage.prompt_token_count is None:
        return None
    return usage.prompt_token_count, (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)


PROTOCOLS = {driver.name: driver for driver in (Chat, Responses, Messages, Gemini)}
assert tuple(PROTOCOLS) == PROTOCOL_NAMES  # the names world.py seeds channels for
