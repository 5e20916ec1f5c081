// The fieldguide chat page: ask, follow the answer as Server-Sent Events, render it safely.
//
// Answers are Markdown rendered with marked and sanitised with DOMPurify before they touch
// the DOM, so nothing in the docs or the answer can run script (the page's CSP forbids
// inline script as a second line of defence). Screenshots are fetched only once their URL
// has arrived in the stream: images exist in the DOM only after a token or a `sources`
// event names them, and carry loading="lazy".
//
// Citation markers [n] in the answer become links to source n (its file at the cited
// lines); pointing at one highlights that source in the list. A marker that names no
// source is not shown. A sentence the check flagged (verify=flag) is marked with ⚠.
"use strict";

(function () {
  const config = JSON.parse(document.body.dataset.config || "{}");
  const thread = document.getElementById("thread");
  const form = document.getElementById("ask");
  const input = document.getElementById("question");
  const sendButton = document.getElementById("send");
  const statusLine = document.getElementById("status");
  const MAX_RECONNECTS = 8;
  const STAGE_LABELS = {
    started: "Starting…", condense: "Reading the conversation…", route: "Reading the question…",
    embed: "Reading the question…", evidence: "Quoting the docs…",
    search: "Searching the docs…", threshold: "Filtering…", rerank: "Ranking sections…",
    cap: "Choosing sections…", reassemble: "Gathering sections…", prompt: "Preparing the answer…",
    generate: "Writing the answer…",
  };

  let conversationId = null;
  const haveRenderer = () => typeof window.marked !== "undefined" && typeof window.DOMPurify !== "undefined";

  // ---- URLs ------------------------------------------------------------------------------
  function normalisePath(path) {
    const out = [];
    for (const part of path.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") out.pop(); else out.push(part);
    }
    return "/" + out.join("/");
  }

  function makeResolver(turn) {
    // Image URLs exactly as written in the docs → where to fetch them (from `sources`).
    return function resolve(url) {
      url = (url || "").trim();
      if (!url) return "";
      if (turn.knownUrls.has(url)) return turn.knownUrls.get(url);
      if (/^(https?:)?\/\//i.test(url)) return url;
      if (/^data:image\/(png|gif|jpeg|webp);/i.test(url)) return url;
      if (/^[a-z][a-z0-9+.-]*:/i.test(url)) return "";  // javascript:, file:, ...
      if (url.startsWith("#")) return url;
      const base = url.startsWith("/") ? "" : turn.firstSourceDir;
      const path = normalisePath(base + "/" + url);
      return (config.imageBaseUrl ? config.imageBaseUrl.replace(/\/+$/, "") : config.assetsPrefix) + path;
    };
  }

  // ---- rendering -------------------------------------------------------------------------
  let currentResolver = null;
  function installSanitizerHooks() {
    if (!haveRenderer() || installSanitizerHooks.done) return;
    installSanitizerHooks.done = true;
    window.DOMPurify.addHook("afterSanitizeAttributes", function (node) {
      if (!currentResolver) return;
      if (node.tagName === "IMG") {
        const src = currentResolver(node.getAttribute("src"));
        if (src) node.setAttribute("src", src); else node.removeAttribute("src");
        node.setAttribute("loading", "lazy");
        node.setAttribute("decoding", "async");
      } else if (node.tagName === "A" && node.hasAttribute("href")) {
        const href = currentResolver(node.getAttribute("href"));
        if (href) node.setAttribute("href", href); else node.removeAttribute("href");
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
    });
  }

  function renderAnswer(turn) {
    turn.renderQueued = false;
    if (!haveRenderer()) {
      turn.answerEl.textContent = turn.text;  // libraries not installed: plain text, still safe
      return;
    }
    installSanitizerHooks();
    currentResolver = turn.resolve;
    const html = window.DOMPurify.sanitize(window.marked.parse(turn.text, { gfm: true, breaks: false }));
    currentResolver = null;
    turn.answerEl.innerHTML = html;
    linkCitations(turn);
    // Keep screenshots already shown instead of re-creating them at every token.
    for (const img of turn.answerEl.querySelectorAll("img")) {
      const src = img.getAttribute("src");
      if (!src) continue;
      const kept = turn.images.get(src);
      if (kept) img.replaceWith(kept); else turn.images.set(src, img);
    }
  }

  // ---- citations -------------------------------------------------------------------------
  const MARKER = /\s?\[(\d{1,3})\]/g;
  const FLAG = "\u26a0";

  function highlightSource(turn, n, on) {
    const item = turn.sourceItems.get(n);
    if (item) item.classList.toggle("cited", on);
  }

  function citationLink(turn, n) {
    const source = turn.sourcesByN.get(n);
    const link = document.createElement("a");
    link.className = "cite";
    link.textContent = "[" + n + "]";
    link.dataset.n = String(n);
    link.href = source.url || source.link || "#";
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    link.title = (source.source || "") + ((source.heading_path || []).length ? " — " + source.heading_path.join(" › ") : "");
    for (const [event, on] of [["mouseenter", true], ["focus", true], ["mouseleave", false], ["blur", false]]) {
      link.addEventListener(event, () => highlightSource(turn, n, on));
    }
    return link;
  }

  function linkCitations(turn) {
    // Text nodes outside code and links: markers become links (or vanish when they name no
    // source), the flag sign gets its explanation.
    const walker = document.createTreeWalker(turn.answerEl, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => (node.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const nodes = [];
    while (walker.nextNode()) {
      const value = walker.currentNode.nodeValue;
      if (value.includes("[") || value.includes(FLAG)) nodes.push(walker.currentNode);
    }
    for (const node of nodes) {
      const parts = document.createDocumentFragment();
      const text = node.nodeValue;
      let last = 0;
      const pattern = new RegExp(MARKER.source + "|" + FLAG, "g");
      let match;
      while ((match = pattern.exec(text)) !== null) {
        parts.append(text.slice(last, match.index));
        if (match[0] === FLAG) {
          const flag = document.createElement("span");
          flag.className = "flag";
          flag.textContent = FLAG;
          flag.title = "Not found in the documentation: check it against the sources.";
          parts.append(flag);
        } else {
          const n = Number(match[1]);
          if (turn.sourcesByN.has(n)) parts.append(" ", citationLink(turn, n));
        }
        last = match.index + match[0].length;
      }
      parts.append(text.slice(last));
      node.replaceWith(parts);
    }
  }

  function scheduleRender(turn) {
    if (turn.renderQueued) return;
    turn.renderQueued = true;
    window.requestAnimationFrame(() => renderAnswer(turn));
  }

  function renderSources(turn, sources) {
    turn.sourcesEl.replaceChildren();
    if (!sources.length) return;
    const title = document.createElement("h3");
    title.textContent = "Sources";
    const list = document.createElement("ol");
    turn.sourcesByN.clear();
    turn.sourceItems.clear();
    sources.forEach((source, index) => {
      const n = source.n || index + 1;
      turn.sourcesByN.set(n, source);
      const item = document.createElement("li");
      item.value = n;
      item.dataset.n = String(n);
      turn.sourceItems.set(n, item);
      const href = source.url || source.link;
      const link = document.createElement(href ? "a" : "span");
      if (href) {
        link.href = href;
        link.target = "_blank";
        link.rel = "noopener noreferrer";
      }
      link.textContent = source.source || "(unknown file)";
      const crumbs = document.createElement("span");
      crumbs.className = "breadcrumb";
      crumbs.textContent = (source.heading_path || []).length ? " — " + source.heading_path.join(" › ") : "";
      item.append(link, crumbs);
      const urls = source.image_urls || [];
      if (urls.length) {
        const shots = document.createElement("div");
        shots.className = "shots";
        urls.forEach((url, index) => {
          if (!url) return;
          const img = document.createElement("img");
          img.loading = "lazy";
          img.decoding = "async";
          img.alt = "Screenshot: " + (source.images[index] || url);
          img.src = url;
          shots.append(img);
        });
        item.append(shots);
      }
      list.append(item);
    });
    turn.sourcesEl.append(title, list);
  }

  // ---- one question --------------------------------------------------------------------------
  function newTurn(question) {
    const article = document.createElement("article");
    article.className = "turn";
    const q = document.createElement("p");
    q.className = "question";
    q.textContent = question;
    const answerEl = document.createElement("div");
    answerEl.className = "answer streaming";
    const sourcesEl = document.createElement("div");
    sourcesEl.className = "sources";
    const metaEl = document.createElement("div");
    metaEl.className = "meta";
    article.append(q, answerEl, sourcesEl, metaEl);
    thread.append(article);
    const understood = document.createElement("p");
    understood.className = "standalone";
    understood.hidden = true;
    q.after(understood);
    const turn = { article, question, answerEl, sourcesEl, metaEl, understood, text: "", lastEventId: 0,
                   finished: false, knownUrls: new Map(), firstSourceDir: "", images: new Map(), renderQueued: false,
                   sourcesByN: new Map(), sourceItems: new Map() };
    turn.resolve = makeResolver(turn);
    return turn;
  }

  function finish(turn, source) {
    turn.finished = true;
    source.close();
    turn.answerEl.classList.remove("streaming");
    sendButton.disabled = false;
    statusLine.textContent = "";
  }

  function showError(turn, message) {
    const box = document.createElement("div");
    box.className = "error";
    box.textContent = message;
    turn.article.append(box);
  }

  function follow(turn, streamUrl, attempt) {
    let url = streamUrl;
    if (turn.lastEventId) {
      url = streamUrl.replace(/([?&])after=\d+&?/, "$1").replace(/[?&]$/, "");
      url += (url.includes("?") ? "&" : "?") + "after=" + turn.lastEventId;
    }
    const source = new EventSource(url);
    turn.source = source;
    const track = (event) => { if (event.lastEventId) turn.lastEventId = Number(event.lastEventId); };

    source.addEventListener("open", () => { attempt = 0; });
    source.addEventListener("status", (event) => {
      track(event);
      const stage = JSON.parse(event.data).stage;
      statusLine.textContent = STAGE_LABELS[stage] || stage;
    });
    source.addEventListener("sources", (event) => {
      track(event);
      const sources = JSON.parse(event.data).sources || [];
      for (const s of sources) {
        (s.images || []).forEach((written, i) => { if (s.image_urls && s.image_urls[i]) turn.knownUrls.set(written, s.image_urls[i]); });
      }
      if (sources.length && sources[0].source) {
        const dir = sources[0].source.split("/").slice(0, -1).join("/");
        turn.firstSourceDir = dir ? "/" + dir : "";
      }
      renderSources(turn, sources);
    });
    source.addEventListener("token", (event) => {
      track(event);
      turn.text += JSON.parse(event.data).text;
      scheduleRender(turn);
    });
    source.addEventListener("done", (event) => {
      track(event);
      const done = JSON.parse(event.data);
      if (done.answer && done.answer !== turn.text) turn.text = done.answer;
      renderAnswer(turn);
      if (done.standalone_question && done.standalone_question !== turn.question) {
        turn.understood.textContent = "Understood as: " + done.standalone_question;
        turn.understood.hidden = false;
      }
      const total = done.timings_ms && done.timings_ms.total;
      turn.metaEl.textContent = (done.abstain ? "No matching documentation found · " : "") +
        (done.intent ? "intent: " + done.intent : "") + (total ? " · " + Math.round(total) + " ms" : "");
      finish(turn, source);
    });
    source.addEventListener("error", (event) => {
      if (event.data) {  // the service's own `error` event
        track(event);
        renderAnswer(turn);
        showError(turn, JSON.parse(event.data).message);
        finish(turn, source);
        return;
      }
      // A dropped connection. EventSource retries by itself (sending Last-Event-ID) while
      // it is CONNECTING; once CLOSED (e.g. a proxy error), reconnect ourselves.
      if (turn.finished) return;
      if (source.readyState === EventSource.CLOSED) {
        if (attempt >= MAX_RECONNECTS) {
          showError(turn, "The connection to the service was lost.");
          finish(turn, source);
          return;
        }
        statusLine.textContent = "Reconnecting…";
        window.setTimeout(() => follow(turn, streamUrl, attempt + 1), Math.min(8000, 500 * 2 ** attempt));
      } else {
        statusLine.textContent = "Reconnecting…";
      }
    });
  }

  async function ask(question) {
    const turn = newTurn(question);
    sendButton.disabled = true;
    statusLine.textContent = "Sending…";
    const send = (id) => fetch("/conversations", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(id ? { question, conversation_id: id } : { question }),
    });
    try {
      let response = await send(conversationId);
      if (response.status === 404 && conversationId) {  // the conversation expired: start afresh
        conversationId = null;
        response = await send(null);
      }
      if (response.status !== 202) {
        const body = await response.json().catch(() => ({}));
        const detail = Array.isArray(body.detail) ? body.detail.map((d) => d.msg).join("; ") : body.detail;
        throw new Error(detail || "the service answered " + response.status);
      }
      const started = await response.json();
      conversationId = started.conversation_id;
      follow(turn, started.stream_url, 0);
    } catch (error) {
      turn.answerEl.classList.remove("streaming");
      showError(turn, error.message);
      sendButton.disabled = false;
      statusLine.textContent = "";
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    if (config.maxQuestionChars && question.length > config.maxQuestionChars) {
      statusLine.textContent = "The question is too long (at most " + config.maxQuestionChars + " characters).";
      return;
    }
    input.value = "";
    ask(question);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  document.getElementById("new-conversation").addEventListener("click", () => {
    conversationId = null;
    thread.replaceChildren();
    input.focus();
  });
})();
