"""The console in English and Chinese (Simplified): every message in the catalogue,
no English left outside it, and the language chosen by the browser, a link or a cookie."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from gateway_console.i18n import DEFAULT, LANGUAGES
from gateway_console.messages import extract, po_path
from gateway_console.web import TEMPLATES

from .conftest import ARGS, CHROMIUM, PASSWORDS  # noqa: F401  (the chromium fixture needs Debian's Chromium)

TEMPLATE_DIR = Path(TEMPLATES.loader.searchpath[0])  # type: ignore[attr-defined]
PLACEHOLDER = re.compile(r"%\([a-z_]+\)s|\{[a-z_]+\}")  # templates' and Python's, and the scripts'
WORD = re.compile(r"[A-Za-z]{2,}")


def catalogue_of(code: str):
    with po_path(code).open("rb") as po:
        return read_po(po, locale=code)


@pytest.mark.parametrize("code", [language.code for language in LANGUAGES if language is not DEFAULT])
def test_every_message_has_a_translation(code):
    catalogue = catalogue_of(code)
    missing, empty, fuzzy, wrong = [], [], [], []
    for message in extract():
        if not message.id:
            continue
        translated = catalogue.get(message.id, context=message.context)
        if translated is None:
            missing.append(message.id)
            continue
        strings = translated.string if isinstance(translated.string, tuple) else (translated.string,)
        if not all(strings):
            empty.append(message.id)
        if translated.fuzzy:
            fuzzy.append(message.id)
        source = message.id if isinstance(message.id, str) else message.id[0]
        if any(sorted(PLACEHOLDER.findall(source)) != sorted(PLACEHOLDER.findall(s)) for s in strings):
            wrong.append(message.id)
    hint = "run `python -m gateway_console.messages` in console/ and translate the new messages"
    assert not missing, f"not in the catalogue ({hint}): {missing}"
    assert not empty, f"no translation: {empty}"
    assert not fuzzy, f"fuzzy (changed since translated, not shown): {fuzzy}"
    assert not wrong, f"placeholders differ from the English: {wrong}"
    assert len(catalogue) > 400  # the whole console, not a sample


# --- no English outside the catalogue -------------------------------------------------------

SHOWN_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt", "data-confirm"}
NOT_WORDS = re.compile(r"Relaygate|USD|UTC|sk-…|req_…|RG-XXXX-XXXX-XXXX-XXXX|gpt-4o-mini, claude-sonnet-4")
# string constants in templates that are never shown: CSS classes, form values, field names
DATA = {"on", "off", "warn", "notice", "error", "neg", "pos", "ok", "new", "/edit", "default", "numeric", "decimal", "day", "time", "site", "mine"}
PROSE = re.compile(r"[A-Za-z]\S*\s+\S*[A-Za-z]|[A-Z][a-z]")


class ShownText(HTMLParser):
    """The text a reader sees or hears: text nodes and the attributes read out, not code."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.in_code = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("code", "pre", "script", "style"):
            self.in_code += 1
        self.found += [value for name, value in attrs if name in SHOWN_ATTRIBUTES and value]

    def handle_endtag(self, tag):
        if tag in ("code", "pre", "script", "style"):
            self.in_code -= 1

    def handle_data(self, data):
        if not self.in_code:
            self.found.append(data)


def english_left(source: str) -> list[str]:
    """English outside ``{% trans %}`` and ``_()`` in a template: in its HTML text and
    shown attributes, and in string constants that are output (``{{ "x" if … }}``) or
    read like prose (a capital letter or two words)."""
    tokens = [token for token in TEMPLATES.lex(source) if token[1] != "whitespace"]
    html, inside_trans, left = [], False, []
    for i, (line, kind, value) in enumerate(tokens):
        if kind == "name" and value == "trans" and tokens[i - 1][1] == "block_begin":
            inside_trans = True
        elif kind == "name" and value == "endtrans":
            inside_trans = False
        elif kind == "data":
            html.append(" " if inside_trans else value)
        elif kind == "string" and WORD.search(value):
            text = value[1:-1]
            before, after = tokens[i - 1], tokens[i + 1]
            if before[2] == "(" and tokens[i - 2][2] in ("_", "gettext", "ngettext"):
                continue  # translated
            if text in DATA or text.endswith(".html") or text.startswith("/") or "\\n" in text or '\\"' in text:
                continue  # a value, a template, a path or a code snippet
            shown = before[1] == "variable_begin" or before[2] == "else" or after[2] == "if"
            if shown or PROSE.search(text):
                left.append(f"line {line}: {value}")
    parser = ShownText()
    parser.feed("".join(html))
    left += [text.strip() for text in parser.found if WORD.search(NOT_WORDS.sub("", text))]
    return left


def test_no_template_text_is_left_in_english():
    left = {path.name: english_left(path.read_text(encoding="utf-8")) for path in sorted(TEMPLATE_DIR.glob("*.html"))}
    assert len(left) > 25
    assert not {name: found for name, found in left.items() if found}


def test_the_check_finds_english_left_out():
    """The heuristic itself: it must catch each way a string escapes the catalogue."""
    assert english_left('<p>Hello there</p>') == ["Hello there"]
    assert english_left('<input placeholder="your name">') == ["your name"]
    assert english_left('{{ "enabled" if x else "disabled" }}') == ['line 1: "enabled"', 'line 1: "disabled"']
    assert english_left('{{ m.button(_("Delete"), name="Delete key " ~ k) }}') == ['line 1: "Delete key "']
    assert english_left('<p>{% trans %}Hello there{% endtrans %} <code>curl -X</code></p>') == []
    assert english_left('<td class="{{ \'on\' if ok else \'off\' }}">{{ _("Hello") }} USD</td>') == []


# --- choosing the language ------------------------------------------------------------------


def html_lang(page: str) -> str:
    return re.search(r'<html lang="([^"]+)"', page).group(1)


@pytest.mark.usefixtures("users")
async def test_english_by_default_chinese_for_a_chinese_browser_and_the_switch(browsers):
    visitor = await browsers()
    status, page = await visitor.get("/console/login")
    assert status == 200 and html_lang(page) == "en" and "Sign in" in page and "登录" not in page
    status, page = await visitor.get("/console/login", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    assert status == 200 and html_lang(page) == "zh-Hans" and "登录" in page and "Sign in" not in page
    # English preferred over Chinese, and a language the console lacks, skipped
    _, page = await visitor.get("/console/login", headers={"Accept-Language": "fr-FR, en;q=0.9, zh;q=0.5"})
    assert html_lang(page) == "en"
    # the switch: links in the header, named in their own language; ?lang= is kept in a cookie
    assert 'hreflang="zh-Hans"' in page and "简体中文" in page
    _, page = await visitor.get("/console/login?lang=zh_Hans")
    assert html_lang(page) == "zh-Hans"
    _, page = await visitor.get("/console/login", headers={"Accept-Language": "en"})
    assert html_lang(page) == "zh-Hans", "the chosen language outlives the browser's"
    _, page = await visitor.get("/console/login?lang=en", headers={"Accept-Language": "zh-CN"})
    assert html_lang(page) == "en" and "Sign in" in page
    _, page = await visitor.get("/console/no-such-page", headers={"Accept-Language": "zh-CN"})
    assert html_lang(page) == "en", "the cookie wins over Accept-Language"
    # a message built in Python: the sign-in form's
    _, page = await visitor.get("/console/login?lang=zh_Hans")
    status, page = await visitor.post("/console/login", {"name": "alice", "password": "wrong"}, csrf_from="/console/login")
    assert status == 401 and "用户名或密码错误。" in page


@pytest.mark.usefixtures("users")
async def test_signed_in_pages_and_form_errors_in_chinese(browsers):
    alice = await browsers("alice")
    _, page = await alice.get("/console/dashboard?lang=zh_Hans")
    assert html_lang(page) == "zh-Hans" and "仪表盘" in page and "退出登录" in page
    shipped = re.search(r'<script type="application/json" id="console-messages">(.*?)</script>', page)
    assert shipped and json.loads(shipped.group(1))["Hide the table"] == "隐藏表格", "the scripts' texts come with the page"
    _, page = await alice.get("/console/wallet")
    assert "钱包" in page and "兑换码" in page
    assert re.search(r'id="balance"[^>]*>10\.00</strong> USD', page), "money is formatted as in English"
    form = {"name": "old", "group": "default", "expires": "2001-01-01T00:00"}
    status, page = await alice.post("/console/keys/new", form, csrf_from="/console/keys/new")
    assert status == 400 and "过期时间 2001-01-01 00:00:00 UTC 已经过去" in page, page[:2000]
    status, page = await alice.post("/console/keys/new", {"name": "x" * 500, "group": "default"}, csrf_from="/console/keys/new")
    assert status == 400 and "名称太长：500 个字符，最多" in page
    _, page = await alice.get("/console/dashboard?lang=en")
    assert html_lang(page) == "en" and "Dashboard" in page and "仪表盘" not in page and "console-messages" not in page


@pytest.mark.usefixtures("users")
def test_the_language_switch_in_chromium(gateway, chromium):
    context, errors = chromium
    page = context.new_page()
    page.goto(gateway.url + "/console/login")
    assert page.get_attribute("html", "lang") == "en"
    page.click("nav.langs a[hreflang=zh-Hans]")
    page.wait_for_function("document.documentElement.lang === 'zh-Hans'")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", PASSWORDS["alice"])
    page.click("button[type=submit]")
    page.wait_for_url("**/console/dashboard**")
    assert page.get_attribute("html", "lang") == "zh-Hans"
    assert page.locator("nav[aria-label='控制台'] a[aria-current=page]").inner_text() == "仪表盘"
    page.click("nav.langs a[hreflang=en]")
    page.wait_for_function("document.documentElement.lang === 'en'")
    assert page.locator("nav[aria-label=Console] a[aria-current=page]").inner_text() == "Dashboard"
    assert not errors


def test_plurals_follow_the_language():
    from gateway_console import i18n
    from gateway_console.views.auth import _duration

    i18n.use(i18n.DEFAULT)
    assert [_duration(n) for n in (1, 45, 300)] == ["1 second", "45 seconds", "5 minutes"]
    i18n.use(i18n.find("zh-CN"))
    try:
        assert [_duration(n) for n in (1, 45, 300)] == ["1 秒", "45 秒", "5 分钟"]
    finally:
        i18n.use(i18n.DEFAULT)


async def test_every_page_renders_in_chinese(browsers, seed, users, start_gateway):
    """Every page, as a user and as an operator, with data in every list: all of it in the
    Chinese catalogue's words, and no page breaks on a translation's placeholders."""
    from .test_console_pages import add_failed_request, chat

    seed.price("demo-chat", 3_000_000, 15_000_000)
    key_id, secret = seed.key(users["alice"], name="laptop", models=["demo-chat"])
    gateway = start_gateway()
    chat(gateway, secret)
    chat(gateway, secret, stream=True)
    failed = add_failed_request(seed, users["alice"], key_id, "req_failed_in_chinese")
    channel_id = seed.rows("SELECT id FROM channels ORDER BY id LIMIT 1")[0]["id"]
    user_pages = ["/console/dashboard", "/console/playground", "/console/keys", "/console/keys/new", f"/console/keys/{key_id}/edit",
                  "/console/logs", f"/console/logs/{failed}", "/console/logs?request=req_none", "/console/wallet", "/console/models",
                  "/console/tokens", "/console/quickstart", "/console/account"]  # fmt: skip
    admin_pages = ["/console/dashboard?view=site", "/console/admin/channels", "/console/admin/channels/new",
                   f"/console/admin/channels/{channel_id}/edit", "/console/admin/users", f"/console/admin/users/{users['alice']}",
                   "/console/admin/groups", "/console/admin/prices", "/console/admin/usage", "/console/admin/logs",
                   f"/console/admin/logs/{failed}", "/console/admin/audit", "/console/admin/codes",
                   f"/console/admin/users/{users['alice']}/keys/{key_id}/edit"]  # fmt: skip
    for name, pages in (("alice", user_pages), ("root", admin_pages)):
        browser = await browsers(name, url=gateway.url)
        for path in pages:
            status, page = await browser.get(path, headers={"Accept-Language": "zh-CN"})
            assert status == 200 and html_lang(page) == "zh-Hans", (path, page[:300])
            title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
            assert title.endswith("Relaygate 控制台") and (re.search(r"[\u4e00-\u9fff]", title.split("·")[0]) or title.startswith("API Key ")), (path, title)
            assert not re.search(r"%\([a-z_]+\)s|\{\{|\{%", page), f"a placeholder left in {path}"


def test_local_times_follow_the_pages_language_on_a_24_hour_clock(gateway, chromium):
    """A Chinese page writes its times as Chinese software does, in numbers on a 24-hour
    clock (2026-11-29 14:05), in an English browser (en-US: 12-hour by default) too."""
    context, errors = chromium
    page = context.new_page()
    page.goto(gateway.url + "/console/login")
    page.click("nav.langs a[hreflang=zh-Hans]")
    page.wait_for_function("document.documentElement.lang === 'zh-Hans'")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", PASSWORDS["alice"])
    page.click("button[type=submit]")
    page.wait_for_url("**/console/dashboard**")
    page.wait_for_function("[...document.querySelectorAll('time[data-local]')].every(t => t.title)")  # charts.js has run
    shown = page.evaluate("[...document.querySelectorAll('time[data-local=time]')].map(t => t.textContent)")
    assert shown and all(re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", text) for text in shown), shown
    expected = page.evaluate(
        """() => { const t = document.querySelector('time[data-local=time]'); const d = new Date(t.getAttribute('datetime'));
                   const p = (n) => String(n).padStart(2, '0');
                   return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`; }"""
    )
    assert shown[0] == expected, "the browser's own zone, 24-hour"
    page.goto(gateway.url + "/console/dashboard?lang=en")
    page.wait_for_function("[...document.querySelectorAll('time[data-local]')].every(t => t.title)")
    shown = page.evaluate("[...document.querySelectorAll('time[data-local=time]')].map(t => t.textContent)")
    assert shown and all("AM" not in text and "PM" not in text and re.search(r"[A-Z][a-z]{2}", text) for text in shown), shown
    assert not errors


async def test_ledger_kinds_and_channel_settings_in_chinese(browsers, seed, users, gateway):
    """The kind of each wallet change, each channel type's settings (name, help, what
    they accept; the setting's own name still shown) and a channel's state, in the
    catalogue's words."""
    seed.topup(users["alice"], 2_000_000, note="invoice 7")
    alice = await browsers("alice")
    _, page = await alice.get("/console/wallet?lang=zh_Hans")
    kinds = re.findall(r'<span class="kind topup">([^<]*)</span>', page)
    assert kinds and set(kinds) == {"充值"}, kinds
    root = await browsers("root")
    _, page = await root.get(f"/console/admin/users/{users['alice']}?lang=zh_Hans")
    assert "<td>充值</td>" in page and "<td>topup</td>" not in page
    _, page = await root.get("/console/admin/channels/new?lang=zh_Hans")
    assert '<span class="setting-name">参数规则</span> <code class="small">parameter_rules</code>' in page
    assert '<span class="setting-name">流式延迟（毫秒）</span> <code class="small">delay_ms</code>' in page
    assert "流式输出中相邻两个词之间的毫秒数；0 到 60000 之间的整数" in page
    assert "milliseconds between streamed words" not in page and "a whole number" not in page
    assert '<option value="true">是</option>' in page  # a three-state bool's choices
    seed.channel("keyless", type="openai", base_url="https://api.example.com/v1", models=["demo-chat"], api_keys=())
    _, page = await root.get("/console/admin/channels?lang=zh_Hans")
    assert '<span class="badge off">无密钥</span>' in page  # a channel's state
    _, page = await root.get("/console/dashboard?view=site")
    assert '<span class="badge off">无密钥</span>' in page and '<span class="badge on">正常</span>' in page
    _, page = await root.get("/console/admin/channels/new?lang=en")
    assert '<span class="setting-name">parameter_rules</span> <small>' in page and "milliseconds between streamed words; a whole number from 0 to 60000" in page


def test_every_installed_channel_setting_is_in_the_catalogue():
    """A new setting of an installed adapter fails this until the catalogue is updated
    (``python -m gateway_console.messages``) and translated."""
    from gateway_console.messages import installed_settings

    catalogue = catalogue_of("zh_Hans")
    settings = installed_settings()
    assert {name for name, _ in settings} >= {"anthropic", "demo", "gemini", "openai"}
    for type_name, setting in settings:
        assert catalogue.get(setting.name, context="channel setting").string, (type_name, setting.name)
        assert catalogue.get(setting.help).string, (type_name, setting.help)
