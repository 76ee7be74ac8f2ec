// The channel form's "Fetch models from the upstream": asks the console (which asks the
// upstream with what the form holds now), lists the models with checkboxes, and keeps
// the Models field in step with them; a model with no price (neither the operator's nor
// the catalogue's) says so. Nothing is saved until the form is.
"use strict";

(() => {
  const box = document.querySelector("[data-upstream-models]");
  if (!box) return;
  const form = box.closest("form");
  const field = form.querySelector("input[name=models]");
  const button = box.querySelector("[data-fetch-models]");
  const message = box.querySelector("[data-models-message]");
  const list = box.querySelector("[data-models-list]");
  const boxes = box.querySelector("[data-models-boxes]");
  const all = box.querySelector("[data-models-all]");
  // the texts come translated in the box's data-text-* attributes; "{name}" in a text is replaced by values.name
  const say = (name, values = {}) => box.dataset[name].replace(/\{(\w+)\}/g, (whole, key) => (key in values ? String(values[key]) : whole));
  let unpriced = new Set();
  let offered = [];

  const typed = () => field.value.split(/[\s,]+/).filter(Boolean);
  const checkedModels = () => Array.from(boxes.querySelectorAll("input:checked"), (input) => input.value);
  const showAll = () => {
    const count = checkedModels().length;
    all.checked = count > 0 && count === offered.length;
    all.indeterminate = count > 0 && count < offered.length;
  };
  // the field: the models typed that the upstream did not list, then the checked ones in the upstream's order
  const fill = () => {
    const listed = new Set(offered);
    field.value = [...typed().filter((model) => !listed.has(model)), ...checkedModels()].join(", ");
    showAll();
  };
  const show = (models) => {
    offered = models;
    const chosen = new Set(typed());
    boxes.replaceChildren(...models.map((model) => {
      const label = document.createElement("label");
      label.className = "check";
      const input = document.createElement("input");
      input.type = "checkbox";
      input.value = model;
      input.checked = chosen.has(model);
      label.append(input, " ", model);
      if (unpriced.has(model)) {
        const note = document.createElement("small");
        note.className = "muted";
        note.textContent = " " + say("textNoPrice");
        label.append(note);
      }
      return label;
    }));
    list.hidden = models.length === 0;
    showAll();
  };
  const tell = (text, ok) => {
    message.hidden = false;
    message.textContent = text;
    message.className = ok ? "notice" : "error";
  };

  button.addEventListener("click", async () => {
    button.disabled = true;
    tell(say("textAsking"), true);
    try {
      const response = await fetch(box.dataset.url, {
        method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin", headers: { "Accept": "application/json" },
      });
      let answer;
      try {
        answer = await response.json();
      } catch (error) {
        answer = { ok: false, models: [], message: say("textFailed", { status: response.status }) };
      }
      tell(answer.message, answer.ok);
      unpriced = new Set(answer.unpriced || []);
      show(answer.ok ? answer.models : []);
    } catch (error) {
      tell(say("textUnreachable"), false);
    } finally {
      button.disabled = false;
    }
  });
  boxes.addEventListener("change", fill);
  all.addEventListener("change", () => {
    for (const input of boxes.querySelectorAll("input")) input.checked = all.checked;
    fill();
  });
})();
