"""Uploads streamed rather than read whole: the multipart head, field rewriting, limits."""

from __future__ import annotations

import pytest

from gateway_core.base.asgi import ClientGone
from gateway_core.errors import InvalidRequestError, RequestTooLargeError
from gateway_core.uploads import HEAD_LIMIT, FormFile, Upload, scan_form

BOUNDARY = "b0und"


def form(*parts: tuple[str, bytes, str | None]) -> bytes:
    out = b""
    for name, value, filename in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        kind = "\r\nContent-Type: application/octet-stream" if filename else ""
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}{kind}\r\n\r\n".encode() + value + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


class Client:
    """An ASGI ``receive`` that sends ``body`` in chunks of ``size`` and counts the calls."""

    def __init__(self, body: bytes, size: int = 1000, disconnect_after: int | None = None) -> None:
        self.chunks = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
        self.calls = 0
        self.disconnect_after = disconnect_after

    async def __call__(self):
        if self.disconnect_after is not None and self.calls >= self.disconnect_after:
            return {"type": "http.disconnect"}
        chunk = self.chunks[self.calls]
        self.calls += 1
        return {"type": "http.request", "body": chunk, "more_body": self.calls < len(self.chunks)}


def upload(body: bytes, *, limit: int = 10**7, size: int = 1000, declared: bool = True, **kwargs) -> tuple[Upload, Client]:
    client = Client(body, size, **kwargs)
    content_type = f"multipart/form-data; boundary={BOUNDARY}"
    return Upload(client, limit=limit, content_type=content_type, content_length=len(body) if declared else None), client


async def collect(up: Upload, replace=None) -> bytes:
    return b"".join([chunk async for chunk in up.body(replace or {})])


def test_scan_finds_fields_files_and_the_end():
    body = form(("model", b"m1", None), ("image", b"\x00" * 10, "a.png"), ("n", b"2", None))
    scan = scan_form(body, BOUNDARY.encode())
    assert scan.complete and scan.files == (FormFile("image", "a.png", "application/octet-stream"),)
    assert {name: body[a:b] for name, (a, b) in scan.spans.items()} == {"model": b"m1", "n": b"2"}
    partial = scan_form(body[: body.index(b"\x00") + 3], BOUNDARY.encode())
    assert not partial.complete and set(partial.spans) == {"model"} and len(partial.files) == 1


async def test_head_stops_at_the_first_file_and_the_rest_streams_with_the_model_replaced():
    payload = bytes(range(256)) * 400  # 100 KiB file
    body = form(("prompt", b"a hat", None), ("model", b"short", None), ("size", b"1024x1024", None), ("image", payload, "a.png"))
    up, client = upload(body)
    fields = await up.read_form_head(("model",))
    assert fields == {"prompt": "a hat", "model": "short", "size": "1024x1024"}
    assert client.calls == 1 and not up.consumed  # only the head was read
    assert up.length({"model": "a-much-longer-name"}) == len(body) + len("a-much-longer-name") - len("short")
    sent = await collect(up, {"model": "a-much-longer-name"})
    assert sent == body.replace(b"\r\n\r\nshort\r\n", b"\r\n\r\na-much-longer-name\r\n")
    assert up.consumed and client.calls == len(client.chunks)
    with pytest.raises(RuntimeError):
        await collect(up)


async def test_a_body_not_yet_streamed_can_be_sent_again():
    body = form(("model", b"m", None))
    up, _ = upload(body, size=10**6)  # the whole body is the head: an attempt may fail and another send it
    await up.read_form_head()
    assert await collect(up, {"model": "x"}) == body.replace(b"\r\n\r\nm\r\n", b"\r\n\r\nx\r\n")
    assert await collect(up, {"model": "y"}) == body.replace(b"\r\n\r\nm\r\n", b"\r\n\r\ny\r\n")
    assert not up.consumed


async def test_content_length_over_the_limit_is_refused_at_once():
    scope = {"headers": [(b"content-length", b"5000"), (b"content-type", b"multipart/form-data; boundary=x")]}
    with pytest.raises(RequestTooLargeError):
        Upload.open(scope, Client(b""), limit=4000)


async def test_a_body_growing_past_the_limit_breaks_when_it_crosses_it():
    body = form(("model", b"m", None), ("image", b"z" * 50_000, "a.png"))
    up, _ = upload(body, limit=20_000, declared=False)
    await up.read_form_head()
    with pytest.raises(RequestTooLargeError):
        await collect(up)
    assert isinstance(up.error, RequestTooLargeError)


async def test_model_after_a_large_file_is_a_clear_400():
    body = form(("image", b"q" * (HEAD_LIMIT + 200_000), "a.png"), ("model", b"m", None))
    up, _ = upload(body, size=64 * 1024)
    with pytest.raises(InvalidRequestError) as caught:
        await up.read_form_head()
    assert caught.value.param == "model" and "before the files" in caught.value.message


async def test_model_after_a_small_file_is_found():
    up, _ = upload(form(("image", b"q" * 5000, "a.png"), ("model", b"m", None)), size=700)
    assert (await up.read_form_head())["model"] == "m"


async def test_not_multipart_is_a_400():
    up = Upload(Client(b"{}"), limit=100, content_type="application/json", content_length=2)
    with pytest.raises(InvalidRequestError):
        await up.read_form_head()


async def test_a_client_gone_mid_upload():
    up, _ = upload(form(("model", b"m", None), ("image", b"z" * 9000, "a.png")), disconnect_after=2)
    await up.read_form_head()
    with pytest.raises(ClientGone):
        await collect(up)
    assert isinstance(up.error, ClientGone)
