// The embeddable widget: one script tag adds fieldguide's chat to any docs site.
//
//   <script src="https://assistant.example.com/widget.js" async
//           data-title="Ask the docs" data-placeholder="How do I…?" data-position="right"></script>
//
// The service serves this file as /widget.js inside one private function scope, after chat.js
// (the chat page's own asking, streaming and safe rendering) and SERVER_CONFIG (its settings),
// so nothing leaks into the page but `window.fieldguideWidget` ({open, close, ask}). Its box
// searches as the reader types (results with highlighted snippets; arrows, Enter, Escape) and asks
// on Enter or "Ask"; Cmd+K (Ctrl+K) opens it from anywhere on the page. Everything
// it draws lives in a shadow root: the page's styles do not reach it, its styles do not leak.
// The launcher is drawn at once; marked and DOMPurify are fetched from the service only when
// the panel first opens (or the browser is idle), into private references: the page's own
// `window.marked` / `window.DOMPurify`, if any, are left as they were. Until they arrive,
// answers show as plain text. The page's origin must be in the service's
// FIELDGUIDE_ALLOWED_ORIGINS, or every request is refused.
/* global SERVER_CONFIG, FieldguideChat */

const script = document.currentScript;
const data = (script && script.dataset) || {};
const base = (data.api || (script && script.src ? new URL(script.src, document.baseURI).origin : "")).replace(/\/+$/, "");
const STYLE = `
:host { all: initial; position: fixed; bottom: 20px; z-index: 2147483000; color: #1d2330;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
:host([data-position="right"]) { right: 20px; } :host([data-position="left"]) { left: 20px; }
* { box-sizing: border-box; }
button { font: inherit; cursor: pointer; border-radius: 6px; border: 1px solid #1f6feb; background: #1f6feb;
  color: #fff; padding: 0.35rem 0.9rem; }
button.secondary { background: #fff; color: #1f6feb; }
button:disabled { opacity: 0.5; cursor: default; }
.launcher { border-radius: 999px; padding: 0.6rem 1.1rem; box-shadow: 0 4px 14px rgba(0,0,0,.18); }
.panel { position: absolute; bottom: 0; width: min(26rem, calc(100vw - 40px)); height: min(36rem, calc(100vh - 40px));
  display: flex; flex-direction: column; background: #f7f8fa; border: 1px solid #d9dee7; border-radius: 10px;
  box-shadow: 0 8px 28px rgba(0,0,0,.22); overflow: hidden; }
:host([data-position="right"]) .panel { right: 0; } :host([data-position="left"]) .panel { left: 0; }
.panel[hidden] { display: none; }
.bar { display: flex; align-items: center; justify-content: space-between; padding: 0.5rem 0.8rem;
  background: #fff; border-bottom: 1px solid #d9dee7; }
.bar strong { font-size: 1rem; }
.bar .close { background: none; border: none; color: #5c6577; font-size: 1.3rem; padding: 0 0.3rem; }
.thread { flex: 1; overflow-y: auto; padding: 0.7rem; }
.turn { background: #fff; border: 1px solid #d9dee7; border-radius: 8px; padding: 0.6rem 0.8rem; margin-bottom: 0.7rem; }
.question { font-weight: 600; margin: 0 0 0.4rem; white-space: pre-wrap; }
.answer img, .sources img { max-width: 100%; height: auto; border: 1px solid #d9dee7; border-radius: 4px; }
.answer table { border-collapse: collapse; } .answer th, .answer td { border: 1px solid #d9dee7; padding: 0.2rem 0.4rem; }
.answer pre { background: #f7f8fa; padding: 0.4rem; overflow-x: auto; }
.answer.streaming::after { content: "▍"; color: #1f6feb; }
.sources { margin-top: 0.6rem; border-top: 1px solid #d9dee7; padding-top: 0.4rem; font-size: 0.85rem; }
.sources h3 { font-size: 0.75rem; margin: 0 0 0.2rem; color: #5c6577; text-transform: uppercase; letter-spacing: .04em; }
.sources ol { margin: 0; padding-left: 1.1rem; } .breadcrumb { color: #5c6577; }
.turn .standalone { margin: -0.2rem 0 0.4rem; color: #5c6577; font-size: 0.85em; }
.answer blockquote { margin: 0.3rem 0; padding: 0.1rem 0.6rem; border-left: 3px solid #d9dee7; color: #2b3344; }
.answer a.cite { font-size: 0.8em; vertical-align: super; text-decoration: none; color: #1f6feb; }
.answer .flag { color: #9a6700; cursor: help; }
.coverage-partial .answer > :first-child, .coverage-not-covered .answer > :first-child { background: #fff8c5; border-left: 4px solid #d4a72c; padding: 0.2rem 0.5rem; font-weight: 600; }
.coverage-partial .answer blockquote { border-left-style: dashed; color: #5c6577; }
.sources li.cited { background: #fff8c5; outline: 2px solid #e3b341; border-radius: 3px; }
.shots { display: flex; gap: 0.4rem; flex-wrap: wrap; margin: 0.3rem 0; } .shots img { width: 9rem; }
.meta { color: #5c6577; font-size: 0.75rem; margin-top: 0.3rem; }
.error { color: #a40e26; background: #fff0f1; border: 1px solid #f3c3c9; border-radius: 4px; padding: 0.3rem 0.5rem; margin-top: 0.4rem; }
form { padding: 0.5rem 0.7rem 0.7rem; border-top: 1px solid #d9dee7; background: #fff; }
textarea { width: 100%; font: inherit; padding: 0.4rem; border: 1px solid #d9dee7; border-radius: 6px; resize: none; }
.actions { display: flex; gap: 0.4rem; align-items: center; margin-top: 0.3rem; }
.status { color: #5c6577; font-size: 0.8rem; }
.feedback { display: flex; gap: 0.3rem; align-items: center; flex-wrap: wrap; margin-top: 0.3rem; font-size: 0.8rem; color: #5c6577; }
.feedback .vote { padding: 0.05rem 0.4rem; } .feedback .vote.chosen { background: #1f6feb; color: #fff; }
.feedback .comment { flex: 1; min-width: 8rem; font: inherit; padding: 0.15rem 0.3rem; border: 1px solid #d9dee7; border-radius: 4px; }
.handoff { display: flex; gap: 0.3rem; align-items: center; flex-wrap: wrap; margin-top: 0.3rem; font-size: 0.8rem; color: #5c6577; }
.handoff button { padding: 0.05rem 0.5rem; } .handoff-form { display: flex; gap: 0.3rem; flex-wrap: wrap; flex: 1; padding: 0; border: 0; background: none; }
.handoff-form[hidden], .handoff button[hidden] { display: none; }
.handoff-form input { flex: 1; min-width: 8rem; font: inherit; padding: 0.15rem 0.3rem; border: 1px solid #d9dee7; border-radius: 4px; }
.results { list-style: none; margin: 0 0 0.3rem; padding: 0.15rem; background: #fff; border: 1px solid #d9dee7;
  border-radius: 6px; max-height: 16rem; overflow-y: auto; }
.results[hidden] { display: none; }
.result { display: block; padding: 0.3rem 0.45rem; border-radius: 4px; cursor: pointer; }
.result.active, .result:hover { background: #eaf2ff; }
.result-title { display: block; font-weight: 600; } .result-breadcrumb { display: block; color: #5c6577; font-size: 0.75rem; }
.result-snippet { display: block; font-size: 0.82rem; } .result mark { background: #fff1a8; color: inherit; }
.ask-option { color: #1f6feb; font-weight: 600; }
select { font: inherit; font-size: 0.8rem; padding: 0.15rem; border: 1px solid #d9dee7; border-radius: 6px; }
select[hidden] { display: none; }
`;

function element(doc, tag, props, children) {
  const node = doc.createElement(tag);
  Object.assign(node, props || {});
  for (const child of children || []) node.append(child);
  return node;
}

function loadLibrary(url, globalName) {
  // A UMD build defines window[globalName]; take it and put back whatever the page had there.
  return new Promise((resolve, reject) => {
    const had = Object.prototype.hasOwnProperty.call(window, globalName);
    const previous = window[globalName];
    const tag = document.createElement("script");
    tag.src = url;
    tag.onload = () => {
      const library = window[globalName];
      if (had) window[globalName] = previous; else delete window[globalName];
      tag.remove();
      library ? resolve(library) : reject(new Error(globalName + " did not load"));
    };
    tag.onerror = () => { tag.remove(); reject(new Error("could not load " + url)); };
    document.head.append(tag);
  });
}

function mount() {
  const host = element(document, "div");
  host.setAttribute("data-fieldguide-widget", "");
  host.setAttribute("data-position", data.position === "left" ? "left" : "right");
  const root = host.attachShadow({ mode: "open" });
  if (root.adoptedStyleSheets && typeof CSSStyleSheet.prototype.replaceSync === "function") {
    const sheet = new CSSStyleSheet();  // not subject to the page's style-src policy
    sheet.replaceSync(STYLE);
    root.adoptedStyleSheets = [sheet];
  } else {
    root.append(element(document, "style", { textContent: STYLE }));
  }
  const title = data.title || "Ask the docs";
  const launcher = element(document, "button", { className: "launcher", type: "button", textContent: title });
  launcher.setAttribute("aria-expanded", "false");
  const close = element(document, "button", { className: "close", type: "button", textContent: "×", title: "Close" });
  const thread = element(document, "div", { className: "thread" });
  thread.setAttribute("aria-live", "polite");
  const input = element(document, "textarea", { rows: 2, placeholder: data.placeholder || "Search or ask a question…" });
  input.setAttribute("aria-label", "Search or ask");
  input.setAttribute("role", "combobox");
  const results = element(document, "ul", { className: "results", hidden: true });
  const choice = element(document, "select", { className: "labels", hidden: true });
  choice.setAttribute("aria-label", "Doc set");
  const send = element(document, "button", { className: "send", type: "submit", textContent: "Ask" });
  const fresh = element(document, "button", { className: "secondary new", type: "button", textContent: "New" });
  const status = element(document, "span", { className: "status" });
  status.setAttribute("role", "status");
  const form = element(document, "form", {}, [results, input,
    element(document, "div", { className: "actions" }, [send, fresh, choice, status])]);
  const panel = element(document, "section", { className: "panel", hidden: true }, [
    element(document, "div", { className: "bar" }, [element(document, "strong", { textContent: title }), close]),
    thread, form]);
  panel.setAttribute("role", "dialog");
  panel.setAttribute("aria-label", title);
  root.append(launcher, panel);
  document.body.append(host);
  performance.mark("fieldguide-widget-attached");
  requestAnimationFrame(() => setTimeout(() => performance.mark("fieldguide-widget-painted"), 0));

  let libs = null;
  let loading = null;
  function loadRenderer() {
    loading = loading || Promise.all([loadLibrary(base + "/vendor/marked.umd.js", "marked"),
                                      loadLibrary(base + "/vendor/purify.min.js", "DOMPurify")])
      .then(([marked, DOMPurify]) => { libs = { marked, DOMPurify }; })
      .catch(() => { /* plain text it stays: still safe */ });
    return loading;
  }
  const labels = FieldguideChat.createLabelChoice({ select: choice, base });
  const chat = FieldguideChat.createChat({ thread, status, send, base, config: SERVER_CONFIG, labels,
                                           libraries: () => libs });
  const searchBox = FieldguideChat.createSearchBox({ input, list: results, base, labels,
                                                    onAsk: () => form.requestSubmit() });

  function open() {
    loadRenderer();
    panel.hidden = false;
    launcher.hidden = true;
    launcher.setAttribute("aria-expanded", "true");
    input.focus();
  }
  function hide() {
    panel.hidden = true;
    launcher.hidden = false;
    launcher.setAttribute("aria-expanded", "false");
  }
  function ask(question) {
    question = String(question || "").trim();
    if (!question) return false;
    if (panel.hidden) open();
    return chat.ask(question);
  }
  launcher.addEventListener("click", open);
  close.addEventListener("click", hide);
  fresh.addEventListener("click", () => { chat.reset(); input.focus(); });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (ask(input.value)) input.value = "";
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  panel.addEventListener("keydown", (event) => {  // Escape: the results first (the box's own), then the panel
    if (event.key === "Escape" && !searchBox.isOpen()) { hide(); launcher.focus(); }
  });
  document.addEventListener("keydown", (event) => {  // Cmd+K / Ctrl+K: open the box from anywhere
    if ((event.metaKey || event.ctrlKey) && !event.altKey && (event.key === "k" || event.key === "K")) {
      event.preventDefault();
      if (panel.hidden) open(); else input.focus();
    }
  });
  (window.requestIdleCallback || ((fn) => setTimeout(fn, 1500)))(() => loadRenderer());
  if (data.open === "true") open();
  window.fieldguideWidget = { open, close: hide, ask };
}

if (document.body) mount(); else document.addEventListener("DOMContentLoaded", mount, { once: true });
