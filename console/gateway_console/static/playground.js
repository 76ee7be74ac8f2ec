// Relaygate console: the playground. Chats through the gateway's
// /v1/chat/completions on this origin with the key secret the user pasted
// (kept in this page only), reading a stream's server-sent events as they come.
"use strict";

(function () {
  const script = document.currentScript;
  const paths = { chat: script.dataset.chat, usage: script.dataset.usage, logs: script.dataset.logs };
  const LOOKUP_TRIES = 12;

  const $ = (id) => document.getElementById(id);
  const t = window.relaygateText;
  let history = [];  // the conversation sent with each turn
  let running = null;  // the AbortController of the turn in progress

  function fillModels() {
    const option = $("pg-key").selectedOptions[0];
    const models = option ? JSON.parse(option.dataset.models || "[]") : [];
    const select = $("pg-model");
    const kept = select.value;
    select.replaceChildren(...models.map((name) => new Option(name, name, false, name === kept)));
    if (!models.length) select.appendChild(new Option(t("(no model for this key)"), ""));
  }

  function showError(text) {
    const box = $("pg-error");
    box.textContent = text;
    box.hidden = !text;
  }

  function addTurn(role, text) {
    const item = document.createElement("li");
    item.className = `turn ${role}`;
    const who = document.createElement("div");
    who.className = "who-said";
    who.textContent = role === "user" ? t("You") : t("Assistant");
    const body = document.createElement("div");
    body.className = "said";
    body.textContent = text;
    item.append(who, body);
    $("pg-turns").appendChild(item);
    return item;
  }

  function setFacts(item, facts) {
    let box = item.querySelector(".facts-line");
    if (!box) {
      box = document.createElement("p");
      box.className = "facts-line muted small";
      item.appendChild(box);
    }
    box.replaceChildren();
    for (const [name, value, link] of facts) {
      const part = document.createElement("span");
      part.className = `fact fact-${name.toLowerCase().replace(/\W+/g, "-")}`;
      part.append(`${t(name)}: `);
      const shown = document.createElement(link ? "a" : "code");
      if (link) shown.href = link;
      shown.textContent = value;
      part.appendChild(shown);
      box.appendChild(part);
    }
  }

  // Server-sent events: "data: …" lines, events ended by a blank line.
  async function* events(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).replace(/^ /, "")).join("\n");
        if (data) yield data;
      }
    }
  }

  async function errorText(response) {
    let detail = "";
    try {
      const body = await response.json();
      detail = (body.error && (body.error.message || body.error)) || JSON.stringify(body);
    } catch (error) { /* not JSON */ }
    return t("The gateway answered {status}", { status: response.status }) + (detail ? `: ${detail}` : "");
  }

  // The request's row in the user's log: its cost (settled after the answer ends).
  async function lookUp(requestId) {
    for (let attempt = 0; attempt < LOOKUP_TRIES; attempt++) {
      const response = await fetch(`${paths.usage}?request_id=${encodeURIComponent(requestId)}`, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (response.ok) {
        const found = (await response.json()).items || [];
        if (found.length) return found[0];
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** attempt, 2000)));
    }
    return null;
  }

  async function send(event) {
    event.preventDefault();
    showError("");
    const option = $("pg-key").selectedOptions[0];
    const secret = $("pg-secret").value.trim();
    const model = $("pg-model").value;
    const text = $("pg-message").value;
    if (!secret) return showError(t("Paste the key's secret first."));
    if (option && option.dataset.prefix && !secret.startsWith(option.dataset.prefix)) {
      return showError(t('That secret is not the key "{name}" (its secret starts with {prefix}).', { name: option.textContent.trim(), prefix: option.dataset.prefix }));
    }
    if (!model) return showError(t("This key can use no model."));
    if (!text.trim()) return;
    const stream = $("pg-stream").checked;
    history.push({ role: "user", content: text });
    addTurn("user", text);
    $("pg-message").value = "";
    const answer = addTurn("assistant", "");
    answer.setAttribute("aria-busy", "true");
    const said = answer.querySelector(".said");
    running = new AbortController();
    $("pg-send").disabled = true;
    $("pg-stop").disabled = false;
    const body = { model, messages: history, stream };
    if (stream) body.stream_options = { include_usage: true };
    let requestId = null;
    let usage = null;
    let costHeader = null;
    let failed = false;
    try {
      const response = await fetch(paths.chat, {
        method: "POST",
        credentials: "omit",  // the key alone authenticates the request, as for any client
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${secret}` },
        body: JSON.stringify(body),
        signal: running.signal,
      });
      requestId = response.headers.get("x-request-id");
      costHeader = response.headers.get("x-relaygate-cost-usd");
      if (!response.ok) throw new Error(await errorText(response));
      if (stream) {
        for await (const data of events(response)) {
          if (data === "[DONE]") break;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message || JSON.stringify(chunk.error));
          const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
          if (delta && delta.content) said.textContent += delta.content;
          if (chunk.usage) usage = chunk.usage;
        }
      } else {
        const reply = await response.json();
        said.textContent = (reply.choices && reply.choices[0] && reply.choices[0].message.content) || "";
        usage = reply.usage || null;
      }
      history.push({ role: "assistant", content: said.textContent });
    } catch (error) {
      history.pop();  // the turn failed: not part of the conversation
      failed = true;
      answer.classList.add("failed");
      showError(error.name === "AbortError" ? t("Stopped.") : String(error.message || error));
    } finally {
      answer.removeAttribute("aria-busy");
      running = null;
      $("pg-send").disabled = false;
      $("pg-stop").disabled = true;
    }
    const facts = [];
    if (usage) facts.push(["Tokens", t("{input} in · {output} out", { input: usage.prompt_tokens, output: usage.completion_tokens })]);
    if (costHeader) facts.push(["Cost", t("{amount} USD", { amount: costHeader })]);
    if (requestId) facts.push(["Request id", requestId]);
    setFacts(answer, facts);
    if (requestId && !costHeader && !failed) {
      const row = await lookUp(requestId);
      if (row) {
        if (!usage) facts.unshift(["Tokens", t("{input} in · {output} out", { input: row.input_tokens ?? 0, output: row.output_tokens ?? 0 })]);
        facts.splice(facts.length - 1, 0, ["Cost", t("{amount} USD", { amount: row.cost })]);
        facts[facts.length - 1] = ["Request id", requestId, `${paths.logs}${row.id}`];
      } else {
        facts.push(["Cost", t("not logged yet")]);
      }
      setFacts(answer, facts);
    }
    answer.dataset.done = "true";
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (!$("pg-form")) return;
    fillModels();
    $("pg-key").addEventListener("change", fillModels);
    $("pg-form").addEventListener("submit", send);
    $("pg-stop").addEventListener("click", () => running && running.abort());
    $("pg-clear").addEventListener("click", () => { history = []; $("pg-turns").replaceChildren(); showError(""); });
  });
})();
