"""Fixtures of the openai adapter's tests: the recorded wire examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway_core.sse import SSESplitter, frame_fields

EXAMPLES = Path(__file__).parent / "examples"


class Examples:
    """Reads the files of ``tests/examples`` (the lead may move this into gateway_core.testing)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def raw(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def json(self, name: str) -> Any:
        return orjson.loads(self.raw(name))

    def sse(self, name: str) -> list[dict[str, Any]]:
        """The JSON objects of a ``data:`` transcript, up to ``data: [DONE]`` (which must be last)."""
        splitter = SSESplitter()
        frames = list(splitter.feed(self.raw(name)))
        assert not splitter.flush().strip(), f"{name}: unterminated last frame"
        datas = [frame_fields(frame)[1] for frame in frames]
        assert datas and datas[-1] == b"[DONE]", f"{name}: must end with data: [DONE]"
        return [orjson.loads(data) for data in datas[:-1]]

    def names(self, pattern: str) -> list[str]:
        return sorted(path.name for path in self.root.glob(pattern))


@pytest.fixture
def examples() -> Examples:
    return Examples(EXAMPLES)
