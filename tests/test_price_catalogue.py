"""The model catalogue: list prices for models the operator has not priced, an
operator's price always winning, ``relaygate price import`` of LiteLLM's table,
and the warnings and sources the fronts show."""

from __future__ import annotations

import contextlib
import io
import json

import attrs
import pytest
import requests

from gateway_core.billing.catalogue import load_catalogue, parse_litellm
from gateway_core.commands.cli import main
from gateway_core.records import PriceRecord
from gateway_core.testing import FakeChat
from gateway_core.testing.fake_protocol import CHAT_PATH


def cli(db: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["--db", db, *argv])
    return status, out.getvalue(), err.getvalue()


def test_every_catalogue_entry_is_an_exact_price():
    catalogue = load_catalogue()
    assert catalogue.checked == "2026-07-24" and len(catalogue.models) >= 150
    mini = catalogue.models["gpt-4o-mini"].price
    assert (mini.input_micros_per_mtok, mini.output_micros_per_mtok, mini.cached_input_micros_per_mtok) == (150_000, 600_000, 75_000)
    sonnet = catalogue.models["claude-sonnet-4-5"].price
    assert (sonnet.cache_write_micros_per_mtok, sonnet.cache_write_1h_micros_per_mtok) == (3_750_000, 6_000_000)
    assert (sonnet.tier_threshold_tokens, sonnet.tier_input_micros_per_mtok, sonnet.tier_output_micros_per_mtok) == (200_000, 6_000_000, 22_500_000)
    assert catalogue.models["gemini-2.5-pro"].context_window == 1_048_576
    for name, model in catalogue.models.items():
        assert model.price.source == "catalogue" and model.price.model == name
        assert all(isinstance(getattr(model.price, field.name), int) for field in attrs.fields(PriceRecord) if field.name.endswith("_micros_per_mtok") and getattr(model.price, field.name) is not None)


def test_litellms_table_reads_exactly_and_rounds_finer_prices_up():
    table = {
        "sample_spec": {"input_cost_per_token": 0.0},
        "acme-large": {"input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05, "cache_read_input_token_cost": 1.25e-06,
                       "input_cost_per_token_above_200k_tokens": 5e-06, "mode": "chat"},
        "acme-tiny": {"input_cost_per_token": 1.234567e-13, "output_cost_per_token": 3e-08},
        "acme-image": {"output_cost_per_image": 0.04, "mode": "image_generation"},
    }  # fmt: skip
    found, skipped = parse_litellm(table)
    by_name = {price.model: price for price in found}
    large = by_name["acme-large"]
    assert (large.input_micros_per_mtok, large.output_micros_per_mtok, large.cached_input_micros_per_mtok) == (2_500_000, 10_000_000, 1_250_000)
    assert (large.tier_threshold_tokens, large.tier_input_micros_per_mtok, large.source) == (200_000, 5_000_000, "operator")
    assert by_name["acme-tiny"].input_micros_per_mtok == 1  # 0.0000001234567 USD per million tokens: one micro-USD, never nothing
    assert skipped == ["acme-image"]


@pytest.fixture
def site(seed, start_gateway, relaygate_config, fakes_thread):
    db = seed.config.db_path
    alice = seed.user("alice", balance_usd=5)
    _, secret = seed.key(alice)
    upstream = fakes_thread.start(FakeChat(api_key=None))
    seed.channel("fake", type="fake", base_url=upstream.url, models=["gpt-4o-mini", "gpt-4.1", "house-model"], free_unpriced=False)
    return db, secret, seed, start_gateway, relaygate_config


def chat(url: str, secret: str, model: str) -> requests.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hello there"}]}
    return requests.post(url + CHAT_PATH, json=body, headers={"authorization": f"Bearer {secret}"}, timeout=30)


def test_an_unpriced_model_is_charged_its_catalogue_price_and_an_operators_price_wins(site):
    db, secret, seed, start_gateway, config = site
    seed.price("gpt-4.1", 1_000_000, 1_000_000)  # the operator's own: under the list price
    gateway = start_gateway()
    for model in ("gpt-4o-mini", "gpt-4.1"):
        assert chat(gateway.url, secret, model).status_code == 200
    refused = chat(gateway.url, secret, "house-model")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_priced"
    rows = {row["model"]: row for row in seed.rows("SELECT model, input_tokens, output_tokens, cost_micros FROM usage_logs WHERE status = 200")}
    mini, own = rows["gpt-4o-mini"], rows["gpt-4.1"]
    assert mini["cost_micros"] == -(-(mini["input_tokens"] * 150_000 + mini["output_tokens"] * 600_000) // 1_000_000)
    assert own["cost_micros"] == -(-(own["input_tokens"] + own["output_tokens"]) * 1_000_000 // 1_000_000)
    assert seed.check().ok

    status, out, _ = cli(db, "price", "list", "--json")
    listed = {price["model"]: price for price in json.loads(out)}
    assert listed["gpt-4o-mini"]["source"] == "catalogue" and listed["gpt-4.1"]["source"] == "operator"
    assert "house-model" not in listed and "claude-opus-4-1" not in listed  # served models only


def test_the_catalogue_can_be_turned_off(site):
    db, secret, seed, start_gateway, config = site
    gateway = start_gateway(attrs.evolve(config, price_catalogue=False))
    refused = chat(gateway.url, secret, "gpt-4o-mini")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_priced"


@pytest.mark.usefixtures("bundled_adapters")  # the CLI adds a demo channel
def test_price_import_and_the_warning_of_channel_add(site, tmp_path):
    db, secret, seed, start_gateway, config = site
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"house-model": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}, "img": {"output_cost_per_image": 0.1}}))
    status, out, err = cli(db, "price", "import", str(table), "--dry-run")
    assert status == 0 and out.startswith("would set the price of 1 model(s)") and not seed.rows("SELECT * FROM prices WHERE model = 'house-model'")
    status, out, err = cli(db, "price", "import", str(table))
    assert status == 0 and "1 entr(ies) without a token price left out" in out, err
    [stored] = seed.rows("SELECT input_micros_per_mtok, output_micros_per_mtok FROM prices WHERE model = 'house-model'")
    assert (stored["input_micros_per_mtok"], stored["output_micros_per_mtok"]) == (1_000_000, 2_000_000)
    table.write_text("[1, 2]")
    status, _, err = cli(db, "price", "import", str(table))
    assert status == 1 and "a price table is a JSON object" in err

    status, out, err = cli(db, "channel", "add", "more", "--type", "demo", "--base-url", "local://demo", "--models", "gpt-4o,nobody-prices-me")
    assert status == 0 and err.count("\n") == 1 and "warning: no price for nobody-prices-me," in err and "gpt-4o" not in err.split(":")[1]


def test_claudes_hour_long_cache_writes_cost_twice_the_input():
    """Anthropic prices a cache write kept for an hour (``cache_control.ttl: 1h``) at twice
    the model's input price (five minutes: 1.25 times); the catalogue had 6 USD for Haiku 3
    and Opus 3, whose inputs are 0.25 and 15."""
    catalogue = load_catalogue()
    claudes = {name: model.price for name, model in catalogue.models.items() if model.provider == "anthropic" and model.price.cache_write_1h_micros_per_mtok}
    assert len(claudes) >= 20
    assert {name: price.cache_write_1h_micros_per_mtok for name, price in claudes.items()} == {name: 2 * price.input_micros_per_mtok for name, price in claudes.items()}
