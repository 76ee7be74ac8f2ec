"""The request path's connection to Redis: Lua scripts over one pipelined connection.

Each request runs a few scripts (its limits taken and given back, its channel's
slot). redis-py spends about 60 µs of CPU on each command beyond the round trip
itself (a connection taken from its pool and given back, retries, observability
hooks, argument encoding), which would cost more than the gateway's target of
0.1 ms per request. :class:`RespClient` does only what these calls need: every
concurrent caller writes its command on one connection and waits for its reply,
in order (Redis answers a connection's commands in the order sent). The
commands of one event-loop iteration go out in one write, so under load many
requests share each system call.

Scripts are sent by SHA-1 (``EVALSHA``) and by source once Redis says it does
not know them (``NOSCRIPT``: after a restart or ``SCRIPT FLUSH``). A reply not
arrived within ``timeout`` fails every waiting caller with redis-py's
``TimeoutError`` and drops the connection; a lost connection fails them with
its ``ConnectionError``; the next call connects again. So callers handle one
set of exceptions (:data:`relaygate_redis.limiter.UNREACHABLE`). Pub/sub,
transactions and the rare calls stay on redis-py.
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
from collections import deque
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

class Encoded:
    """Arguments already in RESP (``count`` bulk strings in ``data``): what a
    caller sends with every call (a subject's keys and limits) is encoded once."""

    __slots__ = ("count", "data")

    def __init__(self, args: Sequence[str | bytes | int | float]) -> None:
        self.count = len(args)
        self.data = b"".join(_bulk(arg) for arg in args)


Arg = str | bytes | int | float | Encoded


class Script:
    """A Lua script and its SHA-1."""

    def __init__(self, source: str) -> None:
        self.source = source.encode("utf-8")
        self.sha = hashlib.sha1(self.source).hexdigest()
        self.by_sha = Encoded(("EVALSHA", self.sha))


def encode(args: Sequence[Arg]) -> bytes:
    """A command in RESP: an array of bulk strings."""
    parts: list[bytes] = []
    append = parts.append
    count = 0
    for arg in args:
        if type(arg) is Encoded:
            append(arg.data)
            count += arg.count
        else:
            append(_bulk(arg))  # type: ignore[arg-type]
            count += 1
    return b"*%d\r\n%b" % (count, b"".join(parts))


def _bulk(arg: str | bytes | int | float) -> bytes:
    kind = type(arg)
    if kind is int:
        data = b"%d" % arg  # type: ignore[str-format]
    elif kind is str:
        data = arg.encode()  # type: ignore[union-attr]
    else:
        data = _bytes(arg)
    return b"$%d\r\n%b\r\n" % (len(data), data)


def _bytes(arg: str | bytes | int | float) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, str):
        return arg.encode("utf-8")
    if isinstance(arg, float):
        return repr(arg).encode()
    return str(arg).encode()


def key_count(keys: Sequence[str | Encoded]) -> int:
    return sum(key.count if isinstance(key, Encoded) else 1 for key in keys)


class _Incomplete(Exception):
    pass


def parse(buffer: bytes | bytearray, pos: int) -> tuple[Any, int]:
    """One reply from ``buffer`` at ``pos``: the value and where the next begins
    (raises :class:`_Incomplete` when the reply has not fully arrived). Error
    replies are returned as :class:`ResponseError` values."""
    end = buffer.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete
    kind, line, pos = buffer[pos], buffer[pos + 1 : end], end + 2
    if kind == 36:  # $ bulk string
        size = int(line)
        if size < 0:
            return None, pos
        if len(buffer) < pos + size + 2:
            raise _Incomplete
        return bytes(buffer[pos : pos + size]), pos + size + 2
    if kind == 42:  # * array
        count = int(line)
        if count < 0:
            return None, pos
        items = []
        for _ in range(count):
            item, pos = parse(buffer, pos)
            items.append(item)
        return items, pos
    if kind == 58:  # : integer
        return int(line), pos
    if kind == 43:  # + simple string
        return bytes(line), pos
    if kind == 45:  # - error
        message = bytes(line).decode("utf-8", "replace")
        return (NoScriptError if message.startswith("NOSCRIPT") else ResponseError)(message), pos
    raise RedisConnectionError(f"unexpected reply from Redis: {bytes(buffer[pos:pos + 40])!r}")


class _Connection(asyncio.Protocol):
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.transport: asyncio.Transport | None = None
        self.waiting: deque[tuple[float, asyncio.Future[Any]]] = deque()
        self.buffer = bytearray()
        self.closed = False
        self._out: list[bytes] = []  # commands of this loop iteration, written together
        self._timer: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def call(self, args: Sequence[Arg]) -> asyncio.Future[Any]:
        if self.closed or self.transport is None:
            raise RedisConnectionError("the connection to Redis is closed")
        future = self._loop.create_future()
        self.waiting.append((self._loop.time() + self.timeout, future))
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(encode(args))
        if self._timer is None:
            self._timer = self._loop.call_later(self.timeout, self._check)
        return future

    def _flush(self) -> None:
        out, self._out = self._out, []
        if self.transport is not None and not self.closed:
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        pos = 0
        try:
            while pos < len(buffer) and self.waiting:
                value, pos = parse(buffer, pos)
                _, future = self.waiting.popleft()
                if not future.done():  # a caller that gave up is skipped
                    if isinstance(value, ResponseError):
                        future.set_exception(value)
                    else:
                        future.set_result(value)
        except _Incomplete:
            pass
        except RedisConnectionError as error:
            self._fail(error)
            return
        del buffer[:pos]

    def _check(self) -> None:
        self._timer = None
        if not self.waiting:
            return
        deadline = self.waiting[0][0]
        if deadline <= self._loop.time():
            self._fail(RedisTimeoutError(f"Redis did not answer within {self.timeout:g} s"))
        else:
            self._timer = self._loop.call_at(deadline, self._check)

    def _fail(self, error: Exception) -> None:
        self.closed = True
        while self.waiting:
            _, future = self.waiting.popleft()
            if not future.done():
                future.set_exception(error)
        if self.transport is not None:
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(RedisConnectionError(f"the connection to Redis was lost ({exc or 'closed by the server'})"))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class RespClient:
    """A pipelined connection to the Redis at ``url`` (``redis://``, ``rediss://``, ``unix://``)."""

    def __init__(self, url: str, timeout: float = 2.0) -> None:
        self.url = url
        self.timeout = timeout
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None

    async def run(self, script: Script, keys: Sequence[str | Encoded], args: Sequence[Arg]) -> Any:
        """The script's reply (``EVALSHA``, then ``EVAL`` when Redis does not know it)."""
        try:
            return await self.call(script.by_sha, key_count(keys), *keys, *args)
        except NoScriptError:
            return await self.call("EVAL", script.source, key_count(keys), *keys, *args)

    def run_nowait(self, script: Script, keys: Sequence[str | Encoded], args: Sequence[Arg]) -> bool:
        """Send the script without waiting for its reply (a release: nothing
        depends on it but later commands on this connection, which Redis runs
        after it). ``False`` when not connected: nothing was sent."""
        connection = self._connection
        if connection is None or connection.closed:
            return False
        connection.call((script.by_sha, key_count(keys), *keys, *args)).add_done_callback(
            lambda done: self._sent(done, script, keys, args)
        )
        return True

    def _sent(self, done: asyncio.Future[Any], script: Script, keys: Sequence[str | Encoded], args: Sequence[Arg]) -> None:
        error = None if done.cancelled() else done.exception()  # retrieved: no caller awaits it
        connection = self._connection
        if isinstance(error, NoScriptError) and connection is not None and not connection.closed:
            connection.call(("EVAL", script.source, key_count(keys), *keys, *args)).add_done_callback(_retrieve)

    async def call(self, *args: Arg) -> Any:
        connection = self._connection
        if connection is None or connection.closed:
            connection = await self._connect()
        return await connection.call(args)

    async def ping(self) -> None:
        await self.call("PING")

    async def _connect(self) -> _Connection:
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.ensure_future(self._open())
        try:
            return await asyncio.shield(self._connecting)
        finally:
            if self._connecting is not None and self._connecting.done():
                self._connecting = None

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        parts = urlsplit(self.url)
        query = parse_qs(parts.query)
        try:
            if parts.scheme == "unix":
                opening = loop.create_unix_connection(lambda: _Connection(self.timeout), parts.path)
            else:
                context = tls_context(query) if parts.scheme == "rediss" else None
                opening = loop.create_connection(lambda: _Connection(self.timeout), parts.hostname or "127.0.0.1", parts.port or 6379, ssl=context)
            _, connection = await asyncio.wait_for(opening, self.timeout)
        except (OSError, asyncio.TimeoutError) as error:
            raise RedisConnectionError(f"cannot connect to Redis at {parts.hostname or parts.path}: {error or type(error).__name__}") from error
        if parts.password is not None:
            user = [unquote(parts.username)] if parts.username else []
            await connection.call(["AUTH", *user, unquote(parts.password)])
        db = query.get("db", [parts.path.strip("/") if parts.scheme != "unix" else ""])[0]
        if db and db != "0":
            await connection.call(["SELECT", db])
        self._connection = connection
        return connection

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and connection.transport is not None:
            connection.closed = True
            connection.transport.close()


def tls_context(query: dict[str, list[str]]) -> ssl.SSLContext:
    """The TLS settings of a ``rediss://`` URL, in redis-py's query names (so the
    pub/sub connection, on redis-py, reads the same URL alike): ``ssl_ca_certs``
    (a CA file; default: the system's), ``ssl_cert_reqs`` (``required``, the
    default, ``optional`` or ``none``), ``ssl_check_hostname`` (``true``/``false``),
    ``ssl_certfile`` and ``ssl_keyfile`` (a client certificate)."""

    def first(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    context = ssl.create_default_context(cafile=first("ssl_ca_certs"))
    check = first("ssl_check_hostname")
    if check is not None and check.lower() in ("0", "false", "no", "off"):
        context.check_hostname = False
    requirement = (first("ssl_cert_reqs") or "required").lower()
    if requirement == "none":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif requirement == "optional":
        context.verify_mode = ssl.CERT_OPTIONAL
    certfile = first("ssl_certfile")
    if certfile:
        context.load_cert_chain(certfile, first("ssl_keyfile"))
    return context


def _retrieve(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()
