"""Request bodies streamed rather than read whole: file uploads.

An :class:`Upload` reads the ASGI body as it arrives and counts it against the
route's limit: a ``Content-Length`` above it is refused (413) before a byte is
read; a body that grows past it mid-way (no or a lying ``Content-Length``)
breaks with the same 413 when the limit is crossed.

For ``multipart/form-data`` (the only form of upload the gateway serves),
:meth:`Upload.read_form_head` reads the head of the body, up to
:data:`HEAD_LIMIT` bytes, until it knows the fields the protocol requires (the
``model``) and every field placed before the first file — clients send their
text fields first (the official SDKs do), so the head is small. Only that
head is kept in memory; :meth:`Upload.body` then yields it, with some field
values replaced (the mapped model), followed by the rest of the body as the
client sends it. The rest goes out once: :attr:`Upload.consumed` tells whether
another attempt could still send the body again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping

import attrs

from .base.asgi import ClientGone, body_timeout, declared_length, too_large
from .errors import GatewayError, InvalidRequestError
from .types import Receive, Scope

HEAD_LIMIT = 256 * 1024  # bytes of a form kept in memory to find its fields
FIELD_LIMIT = 64 * 1024  # bytes of one text field's value
_HEADERS_LIMIT = 16 * 1024  # bytes of one part's headers


@attrs.frozen
class FormFile:
    """A file part of a form, as its headers describe it."""

    field: str
    filename: str
    content_type: str | None = None


@attrs.frozen
class FormScan:
    """What the head of a multipart body says so far.

    ``spans`` are the byte offsets of each complete text field's value in the
    head (a field sent twice keeps its first); ``files`` the file parts whose
    headers are complete; ``complete`` that the closing delimiter was seen.
    """

    spans: dict[str, tuple[int, int]]
    files: tuple[FormFile, ...]
    complete: bool


def scan_form(head: bytes, boundary: bytes) -> FormScan:
    """Scan the complete parts at the start of a multipart body (pure).

    Raises ``InvalidRequestError`` for a body that cannot be multipart/form-data
    with this boundary.
    """
    delimiter = b"--" + boundary
    spans: dict[str, tuple[int, int]] = {}
    files: list[FormFile] = []
    start = head.find(delimiter)
    if start < 0:
        if len(head) > len(delimiter) + 1024:
            raise InvalidRequestError("The multipart body does not start with its boundary.")
        return FormScan(spans, (), False)
    pos = start + len(delimiter)
    while True:
        if len(head) < pos + 2:
            return FormScan(spans, tuple(files), False)
        if head[pos : pos + 2] == b"--":
            return FormScan(spans, tuple(files), True)
        if head[pos : pos + 2] != b"\r\n":
            raise InvalidRequestError("The multipart body is malformed: a boundary is not followed by a line end.")
        headers_end = head.find(b"\r\n\r\n", pos + 2)
        if headers_end < 0:
            if len(head) - pos > _HEADERS_LIMIT:
                raise InvalidRequestError("The multipart body is malformed: a part's headers never end.")
            return FormScan(spans, tuple(files), False)
        name, filename, content_type = _part_headers(head[pos + 2 : headers_end])
        value_start = headers_end + 4
        if filename is not None:
            files.append(FormFile(name, filename, content_type))
        end = head.find(b"\r\n" + delimiter, value_start)
        if end < 0:
            return FormScan(spans, tuple(files), False)
        if filename is None and name not in spans:
            spans[name] = (value_start, end)
        pos = end + 2 + len(delimiter)


def _part_headers(raw: bytes) -> tuple[str, str | None, str | None]:
    name: str | None = None
    filename: str | None = None
    content_type: str | None = None
    for line in raw.decode("utf-8", "replace").split("\r\n"):
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "content-type":
            content_type = value.strip()
        elif key == "content-disposition":
            params = _params(value)
            name, filename = params.get("name"), params.get("filename")
    if name is None:
        raise InvalidRequestError("The multipart body is malformed: a part has no 'Content-Disposition' name.")
    return name, filename, content_type


def _params(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in header.split(";")[1:]:
        key, sep, value = item.strip().partition("=")
        if sep:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1].replace('\\"', '"')
            out[key.strip().lower()] = value
    return out


def form_boundary(content_type: str | None) -> bytes:
    """The boundary of a ``multipart/form-data`` content type, or 400."""
    kind, _, rest = (content_type or "").partition(";")
    if kind.strip().lower() != "multipart/form-data":
        raise InvalidRequestError(
            f"This endpoint takes multipart/form-data, not {kind.strip() or 'a body without a Content-Type'}."
        )
    boundary = _params(";" + rest).get("boundary")
    if not boundary or len(boundary) > 200:
        raise InvalidRequestError("The multipart/form-data Content-Type has no valid boundary.")
    return boundary.encode("latin-1")


class Upload:
    """A request body read as it arrives (see the module's docstring)."""

    def __init__(
        self, receive: Receive, *, limit: int, content_type: str | None, content_length: int | None, timeout: float | None = None
    ) -> None:
        self._receive = receive
        self.limit = limit
        self.timeout = timeout  # seconds for the whole body to arrive (408 past them)
        self._deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        self.content_type = content_type
        self.content_length = content_length
        self.received = 0  # bytes read from the client so far
        self.error: BaseException | None = None  # why reading the body broke (413, client gone)
        self.fields: dict[str, str] = {}  # the text fields found in the head
        self.files: tuple[FormFile, ...] = ()  # the file parts found in the head
        self._head = b""
        self._spans: dict[str, tuple[int, int]] = {}
        self._more = True  # the client has more to send
        self._live = False  # bytes past the head have been handed out

    @classmethod
    def open(cls, scope: Scope, receive: Receive, limit: int, timeout: float | None = None) -> Upload:
        """An upload of ``scope``'s body; 413 at once when its ``Content-Length`` exceeds ``limit``."""
        length = declared_length(scope, limit)
        content_type = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"content-type"), None)
        return cls(receive, limit=limit, content_type=content_type, content_length=length, timeout=timeout)

    @property
    def consumed(self) -> bool:
        """Whether part of the body past the head has been sent: it cannot be sent again."""
        return self._live

    @property
    def text_size(self) -> int:
        """Bytes of the text fields found in the head (what token estimates count)."""
        return sum(end - start for start, end in self._spans.values())

    async def _next_chunk(self) -> bytes:
        """The next bytes from the client (``b""`` at the end), within the limit."""
        if not self._more:
            return b""
        try:
            try:
                async with asyncio.timeout_at(self._deadline):
                    message = await self._receive()
            except TimeoutError:
                raise body_timeout(self.timeout or 0.0) from None
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunk: bytes = message.get("body", b"")
            self._more = bool(message.get("more_body", False))
            self.received += len(chunk)
            if self.received > self.limit:
                raise too_large(self.limit)
            return chunk
        except ClientGone as error:
            self.error, self._more = error, False
            raise
        except GatewayError as error:  # too large, too slow: the answer closes the connection
            self.error = error
            raise

    async def read_all(self) -> bytes:
        """The whole body, in memory (for routes that need it whole)."""
        chunks = [self._head]
        while self._more:
            chunks.append(await self._next_chunk())
        self._head = b"".join(chunks)
        return self._head

    async def read_form_head(self, required: Iterable[str] = ("model",)) -> dict[str, str]:
        """Read the head of a multipart body until the ``required`` fields and every
        field before the first file part are known; return the text fields found."""
        boundary = form_boundary(self.content_type)
        needed = tuple(required)
        while True:
            scan = scan_form(self._head, boundary)
            found = all(name in scan.spans for name in needed)
            if scan.complete:
                while self._more and len(self._head) <= HEAD_LIMIT:  # read the body's end (an empty last message)
                    self._head += await self._next_chunk()
                break
            if not self._more or (found and (scan.files or len(self._head) > HEAD_LIMIT)):
                break
            if len(self._head) > HEAD_LIMIT:
                missing = ", ".join(f"'{n}'" for n in needed if n not in scan.spans)
                raise InvalidRequestError(
                    f"The form field(s) {missing} must come before the files, within the first "
                    f"{HEAD_LIMIT // 1024} KiB of the body: the gateway reads them before streaming the upload.",
                    param=needed[0] if needed else None,
                )
            self._head += await self._next_chunk()
        absent = [n for n in needed if n not in scan.spans]
        if absent:
            raise InvalidRequestError(f"The form field '{absent[0]}' is required.", param=absent[0])
        self._spans, self.files = scan.spans, scan.files
        self.fields = {}
        for name, (start, end) in scan.spans.items():
            if end - start > FIELD_LIMIT:
                continue  # a long text field (a prompt): streamed, never interpreted
            self.fields[name] = self._head[start:end].decode("utf-8", "replace")
        return self.fields

    def _replaced_head(self, replace: Mapping[str, str]) -> bytes:
        head = self._head
        for start, end, value in sorted(
            ((*self._spans[name], value) for name, value in replace.items() if name in self._spans), reverse=True
        ):
            head = head[:start] + value.encode() + head[end:]
        return head

    def length(self, replace: Mapping[str, str] = {}) -> int | None:
        """The size of :meth:`body` with ``replace``, when the client declared its own."""
        if self.content_length is None:
            return None
        return self.content_length - len(self._head) + len(self._replaced_head(replace))

    async def body(self, replace: Mapping[str, str] = {}, on_end: Callable[[], None] | None = None) -> AsyncIterator[bytes]:
        """The body to send on: the head (``replace`` putting new values in its text
        fields), then the rest as it arrives. ``on_end`` is called once the last
        byte was handed out. Raises when the body cannot be sent (again)."""
        if self._live:
            raise RuntimeError("the upload was already streamed: it cannot be sent twice")
        head = self._replaced_head(replace)
        if head:
            yield head
        while self._more and self.error is None:
            self._live = True
            chunk = await self._next_chunk()
            if chunk:
                yield chunk
        if on_end is not None:
            on_end()
