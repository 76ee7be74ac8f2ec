"""The operator's view: ``relaygate channel types`` lists the bedrock type and its
setting once the package is installed, and a channel is added as the docs say."""

from __future__ import annotations

import contextlib
import io

from gateway_core.commands.cli import main


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(list(argv))
    return status, out.getvalue()


def test_channel_types_lists_bedrock_and_a_channel_is_added_as_documented(tmp_path):
    db = str(tmp_path / "relaygate.db")
    assert cli("--db", db, "init", "--json")[0] == 0
    status, listed = cli("--db", db, "channel", "types")
    assert status == 0 and "bedrock: chat" in listed and "region" in listed
    status, added = cli("--db", db, "channel", "add", "aws", "--type", "bedrock", "--base-url", "https://bedrock-runtime.{region}.amazonaws.com",
                        "--setting", "region=eu-west-1", "--api-key", "AKIAEXAMPLE:secret/x+y", "--models", "eu.anthropic.claude-haiku-4-5-20251001-v1:0")  # fmt: skip
    assert status == 0 and "type bedrock" in added
    status, prices = cli("--db", db, "price", "list")
    line = next(line for line in prices.splitlines() if line.startswith("eu.anthropic.claude-haiku-4-5-20251001-v1:0"))
    assert "1.1" in line and "5.5" in line and "catalogue" in line  # the regional list price, from the catalogue


def test_a_channel_on_the_credential_chain_with_invoke_is_added(tmp_path):
    db = str(tmp_path / "relaygate.db")
    assert cli("--db", db, "init", "--json")[0] == 0
    status, listed = cli("--db", db, "channel", "types")
    assert "api" in listed and "control_url" in listed
    status, added = cli("--db", db, "channel", "add", "aws", "--type", "bedrock", "--base-url", "https://bedrock-runtime.{region}.amazonaws.com",
                        "--setting", "api=invoke", "--api-key", "aws:profile=prod", "--models", "anthropic.claude-haiku-4-5-20251001-v1:0")  # fmt: skip
    assert status == 0 and "type bedrock" in added
    status, _ = cli("--db", db, "channel", "add", "bad", "--type", "bedrock", "--base-url", "https://x", "--setting", "api=other",
                    "--api-key", "aws:chain", "--models", "m")  # fmt: skip
    assert status != 0  # api is converse or invoke
