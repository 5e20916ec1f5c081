// The fieldguide chat: ask, follow the answer as Server-Sent Events, render it safely.
// Shared by the chat page (app.js) and the embeddable widget (widget.js), so both render alike.
//
// Answers are Markdown rendered with marked and sanitised with DOMPurify before they touch
// the DOM, so nothing in the docs or the answer can run script. Screenshots are fetched only
// once their URL has arrived in the stream: images exist in the DOM only after a token or a
// `sources` event names them, and carry loading="lazy".
//
// Citation markers [n] in the answer become links to source n (its file at the cited
// lines); pointing at one highlights that source in the list. A marker that names no
// source is not shown. A sentence the check flagged (verify=flag) is marked with ⚠. A
// follow-up shows the standalone question it was understood as.
//
// createChat({thread, status, send, base, config, libraries}) wires one conversation:
//   thread     element the turns are appended to
//   status     element for one line of progress ("Searching the docs…")
//   send       the ask button (disabled while an answer streams)
//   base       origin of the fieldguide service ("" for the page's own)
//   config     {imageBaseUrl, assetsPrefix, maxQuestionChars, handoff (a support target is configured)}
//   libraries  () => {marked, DOMPurify} or null (not loaded yet: plain text, still safe)
//   labels     () => the doc sets the reader chose ([]: the service's default set)
// and returns {ask(question) -> false when it cannot be sent, reset()}.
//
// createSearchBox({input, list, base, labels, onAsk}) makes the same box search as the reader
// types (GET /search, debounced; the list shows title, breadcrumb and highlighted snippet, then an
// "Ask" option): arrows move through it, Enter opens the chosen section or, with none chosen,
// asks; Escape closes it. createLabelChoice({select, base}) fills a <select> with the service's doc
// sets when it has more than one and returns the `labels` function for the two above.
"use strict";

const FieldguideChat = (function () {
  const MAX_RECONNECTS = 8;
  const STAGE_LABELS = {
    started: "Starting…", condense: "Reading the conversation…", route: "Reading the question…",
    embed: "Reading the question…", search: "Searching the docs…", threshold: "Filtering…",
    rerank: "Ranking sections…", weigh_intent: "Ranking sections…", evidence: "Quoting the docs…",
    cap: "Choosing sections…", reassemble: "Gathering sections…", prompt: "Preparing the answer…",
    generate: "Writing the answer…",
  };

  // A heading path holds each heading as written; the breadcrumb shows it as the page does (the
  // same rules as fieldguide/headings.py): no explicit id ("Install {#install}"), a link's text
  // without its target, code as written, emphasis as its words, no HTML tags.
  const EMPHASIS = /(?<![\w*])(\*{1,3}|_{1,3})(?=\S)(.+?)(?<=\S)\1(?![\w*])/g;

  function renderProse(text) {
    let out = text.replace(/<\/?[A-Za-z][^<>]*>/g, " ");
    for (let i = 0; i < 2; i += 1) out = out.replace(EMPHASIS, "$2");  // **_nested_** emphasis
    return out;
  }

  function headingLabel(title) {
    const text = title.replace(/\s*\{#[^\s{}]+\}$/, "").replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1");
    // split keeps the captures: prose, backticks, code, prose, ...
    const pieces = text.split(/(`+)(.+?)\1/);
    return pieces.map((piece, i) => (i % 3 === 0 ? renderProse(piece) : i % 3 === 2 ? piece.trim() : ""))
      .join("").split(/\s+/).filter(Boolean).join(" ");
  }

  function breadcrumb(headingPath, pageTitle) {
    // A page whose title is only in its front matter (no H1) shows that title first, as the site does.
    const crumbs = (headingPath || []).map(headingLabel);
    const title = (pageTitle || "").trim();
    if (title && crumbs[0] !== title) crumbs.unshift(title);
    return crumbs.join(" › ");
  }

  function sourceCrumbs(source) {
    const shown = breadcrumb(source.heading_path, source.page_title);
    return shown ? " — " + shown : "";
  }

  // ---- URLs ------------------------------------------------------------------------------
  function normalisePath(path) {
    const out = [];
    for (const part of path.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") out.pop(); else out.push(part);
    }
    return "/" + out.join("/");
  }

  function onService(base, url) {
    // A URL the service gave ("/docs-assets/...") as the browser must fetch it from this page.
    return url && url.startsWith("/") && !url.startsWith("//") ? base + url : url;
  }

  function makeResolver(turn, base, config) {
    // Image URLs exactly as written in the docs → where to fetch them (from `sources`).
    return function resolve(url) {
      url = (url || "").trim();
      if (!url) return "";
      if (turn.knownUrls.has(url)) return turn.knownUrls.get(url);
      if (/^(https?:)?\/\//i.test(url)) return url;
      if (/^data:image\/(png|gif|jpeg|webp);/i.test(url)) return url;
      if (/^[a-z][a-z0-9+.-]*:/i.test(url)) return "";  // javascript:, file:, ...
      if (url.startsWith("#")) return url;
      const rel = url.startsWith("/") ? "" : turn.firstSourceDir;
      const path = normalisePath(rel + "/" + url);
      return config.imageBaseUrl ? config.imageBaseUrl.replace(/\/+$/, "") + path
        : base + (config.assetsPrefix || "/docs-assets") + path;
    };
  }

  // ---- rendering -------------------------------------------------------------------------
  const hooked = new WeakSet();
  let currentResolver = null;
  function installSanitizerHooks(DOMPurify) {
    if (hooked.has(DOMPurify)) return;
    hooked.add(DOMPurify);
    DOMPurify.addHook("afterSanitizeAttributes", function (node) {
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

  function renderAnswer(turn, libraries) {
    turn.renderQueued = false;
    const libs = libraries();
    if (!libs) {
      turn.answerEl.textContent = turn.text;  // libraries not loaded: plain text, still safe
      return;
    }
    installSanitizerHooks(libs.DOMPurify);
    currentResolver = turn.resolve;
    const html = libs.DOMPurify.sanitize(libs.marked.parse(turn.text, { gfm: true, breaks: false }));
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
    const link = turn.answerEl.ownerDocument.createElement("a");
    link.className = "cite";
    link.textContent = "[" + n + "]";
    link.dataset.n = String(n);
    link.href = onService(turn.base, source.url || source.link) || "#";
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    link.title = (source.source || "") + sourceCrumbs(source);
    for (const [event, on] of [["mouseenter", true], ["focus", true], ["mouseleave", false], ["blur", false]]) {
      link.addEventListener(event, () => highlightSource(turn, n, on));
    }
    return link;
  }

  function linkCitations(turn) {
    // Text nodes outside code and links: markers become links (or vanish when they name no
    // source), the flag sign gets its explanation.
    const doc = turn.answerEl.ownerDocument;
    const walker = doc.createTreeWalker(turn.answerEl, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => (node.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const nodes = [];
    while (walker.nextNode()) {
      const value = walker.currentNode.nodeValue;
      if (value.includes("[") || value.includes(FLAG)) nodes.push(walker.currentNode);
    }
    for (const node of nodes) {
      const parts = doc.createDocumentFragment();
      const text = node.nodeValue;
      let last = 0;
      const pattern = new RegExp(MARKER.source + "|" + FLAG, "g");
      let match;
      while ((match = pattern.exec(text)) !== null) {
        parts.append(text.slice(last, match.index));
        if (match[0] === FLAG) {
          const flag = doc.createElement("span");
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

  function renderSources(turn, sources, base) {
    const doc = turn.sourcesEl.ownerDocument;
    turn.sourcesEl.replaceChildren();
    turn.sourcesByN.clear();
    turn.sourceItems.clear();
    if (!sources.length) return;
    const title = doc.createElement("h3");
    title.textContent = "Sources";
    const list = doc.createElement("ol");
    sources.forEach((source, position) => {
      const n = source.n || position + 1;
      turn.sourcesByN.set(n, source);
      const item = doc.createElement("li");
      item.value = n;
      item.dataset.n = String(n);
      turn.sourceItems.set(n, item);
      const href = source.url || source.link;
      const link = doc.createElement(href ? "a" : "span");
      if (href) {
        link.href = onService(base, href);
        link.target = "_blank";
        link.rel = "noopener noreferrer";
      }
      link.textContent = source.source || "(unknown file)";
      const crumbs = doc.createElement("span");
      crumbs.className = "breadcrumb";
      crumbs.textContent = sourceCrumbs(source);
      item.append(link, crumbs);
      const urls = source.image_urls || [];
      if (urls.length) {
        const shots = doc.createElement("div");
        shots.className = "shots";
        urls.forEach((url, index) => {
          if (!url) return;
          const img = doc.createElement("img");
          img.loading = "lazy";
          img.decoding = "async";
          img.alt = "Screenshot: " + (source.images[index] || url);
          img.src = onService(base, url);
          shots.append(img);
        });
        item.append(shots);
      }
      list.append(item);
    });
    turn.sourcesEl.append(title, list);
  }

  // How the meta line names an answer the docs may not give (the answer's own first sentence says it too).
  const COVERAGE_LABELS = {
    partial: "The docs may not answer this: closest passages only · ",
    not_covered: "No matching documentation found · ",
  };

  // The answer's coverage verdict as a class: a partial answer and an abstention look unlike an answer.
  function markCoverage(turn, coverage) {
    if (!coverage) return;
    turn.article.classList.toggle("coverage-partial", coverage === "partial");
    turn.article.classList.toggle("coverage-not-covered", coverage === "not_covered");
  }

  function createChat(options) {
    const { thread, status, send, base = "", config = {}, libraries } = options;
    const labels = options.labels || (() => []);  // the doc sets the reader chose (none: the default)
    const doc = thread.ownerDocument;
    let conversationId = null;
    let turnCount = 0;  // turns of this conversation (the service's `done` event names it too)

    function newTurn(question) {
      const article = doc.createElement("article");
      article.className = "turn";
      const q = doc.createElement("p");
      q.className = "question";
      q.textContent = question;
      const answerEl = doc.createElement("div");
      answerEl.className = "answer streaming";
      const sourcesEl = doc.createElement("div");
      sourcesEl.className = "sources";
      const metaEl = doc.createElement("div");
      metaEl.className = "meta";
      const understood = doc.createElement("p");
      understood.className = "standalone";
      understood.hidden = true;
      article.append(q, understood, answerEl, sourcesEl, metaEl);
      thread.append(article);
      const turn = { article, question, answerEl, sourcesEl, metaEl, understood, text: "", lastEventId: 0,
                     finished: false, knownUrls: new Map(), firstSourceDir: "", images: new Map(),
                     renderQueued: false, sourcesByN: new Map(), sourceItems: new Map(), base };
      turn.resolve = makeResolver(turn, base, config);
      return turn;
    }

    function scheduleRender(turn) {
      if (turn.renderQueued) return;
      turn.renderQueued = true;
      window.requestAnimationFrame(() => renderAnswer(turn, libraries));
    }

    function finish(turn, source) {
      turn.finished = true;
      if (source) source.close();
      turn.answerEl.classList.remove("streaming");
      send.disabled = false;
      status.textContent = "";
    }

    // Thumbs up / down and an optional comment under a finished answer:
    // POST /conversations/{id}/feedback {"turn", "rating", "comment"}.
    function addFeedback(turn, conversation, number) {
      const box = doc.createElement("div");
      box.className = "feedback";
      const label = doc.createElement("span");
      label.textContent = "Was this helpful?";
      const up = doc.createElement("button");
      up.type = "button";
      up.className = "vote secondary";
      up.textContent = "👍";
      up.setAttribute("aria-label", "Helpful");
      const down = up.cloneNode(false);
      down.textContent = "👎";
      down.setAttribute("aria-label", "Not helpful");
      const comment = doc.createElement("input");
      comment.type = "text";
      comment.className = "comment";
      comment.maxLength = 2000;
      comment.placeholder = "What was missing or wrong? (optional)";
      comment.setAttribute("aria-label", "Comment on this answer");
      const note = doc.createElement("span");
      note.className = "note";
      note.setAttribute("role", "status");
      async function vote(rating) {
        up.disabled = down.disabled = true;
        try {
          const response = await fetch(base + "/conversations/" + encodeURIComponent(conversation) + "/feedback", {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ turn: number, rating, comment: comment.value.trim() }),
          });
          if (response.status !== 204) throw new Error("the service answered " + response.status);
          note.textContent = "Thanks for the feedback.";
          (rating === "up" ? up : down).classList.add("chosen");
          comment.disabled = true;
          if (rating === "down") addHandoff(turn, conversation, number, "Want a person to help with this?");
        } catch (error) {
          note.textContent = "Could not send the feedback (" + error.message + ").";
          up.disabled = down.disabled = false;
        }
      }
      up.addEventListener("click", () => vote("up"));
      down.addEventListener("click", () => vote("down"));
      box.append(label, up, down, comment, note);
      turn.article.append(box);
    }

    // "Contact support": the conversation up to this turn goes to the docs team's support
    // (POST /conversations/{id}/handoff {"turn", "contact", "message"}), offered when the docs do
    // not cover the question or after a thumbs-down, where the service has a handoff target.
    function addHandoff(turn, conversation, number, prompt) {
      if (!config.handoff || turn.handoffEl) return;
      const box = doc.createElement("div");
      box.className = "handoff";
      turn.handoffEl = box;
      const label = doc.createElement("span");
      label.textContent = prompt;
      const open = doc.createElement("button");
      open.type = "button";
      open.className = "secondary contact-support";
      open.textContent = "Contact support";
      const form = doc.createElement("form");
      form.className = "handoff-form";
      form.hidden = true;
      const contact = doc.createElement("input");
      contact.type = "text";
      contact.className = "contact";
      contact.required = true;
      contact.maxLength = 320;
      contact.autocomplete = "email";
      contact.placeholder = "Your email, so support can reply";
      contact.setAttribute("aria-label", "How support can reach you");
      const message = doc.createElement("input");
      message.type = "text";
      message.className = "message";
      message.maxLength = 2000;
      message.placeholder = "Anything to add? (optional)";
      message.setAttribute("aria-label", "Message to support");
      const sendButton = doc.createElement("button");
      sendButton.type = "submit";
      sendButton.textContent = "Send to support";
      const note = doc.createElement("span");
      note.className = "note";
      note.setAttribute("role", "status");
      form.append(contact, message, sendButton);
      open.addEventListener("click", () => {
        open.hidden = true;
        form.hidden = false;
        contact.focus();
      });
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const reach = contact.value.trim();
        if (!reach) return;
        sendButton.disabled = true;
        try {
          const response = await fetch(base + "/conversations/" + encodeURIComponent(conversation) + "/handoff", {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ turn: number, contact: reach, message: message.value.trim() }),
          });
          if (response.status !== 202) {
            const body = await response.json().catch(() => ({}));
            const detail = Array.isArray(body.detail) ? body.detail.map((d) => d.msg).join("; ") : body.detail;
            throw new Error(detail || "the service answered " + response.status);
          }
          form.hidden = true;
          label.textContent = "";
          note.textContent = "Sent to support: they will reply to " + reach + ".";
        } catch (error) {
          note.textContent = "Could not send it to support (" + error.message + ").";
          sendButton.disabled = false;
        }
      });
      box.append(label, open, form, note);
      turn.article.append(box);
    }

    function showError(turn, message) {
      const box = doc.createElement("div");
      box.className = "error";
      box.setAttribute("role", "alert");
      box.textContent = message;
      turn.article.append(box);
    }

    function follow(turn, streamUrl, attempt) {
      let url = streamUrl;
      if (turn.lastEventId) {
        url = streamUrl.replace(/([?&])after=\d+&?/, "$1").replace(/[?&]$/, "");
        url += (url.includes("?") ? "&" : "?") + "after=" + turn.lastEventId;
      }
      const source = new EventSource(onService(base, url));
      turn.source = source;
      const track = (event) => { if (event.lastEventId) turn.lastEventId = Number(event.lastEventId); };

      source.addEventListener("open", () => { attempt = 0; });
      source.addEventListener("status", (event) => {
        track(event);
        const stage = JSON.parse(event.data).stage;
        status.textContent = STAGE_LABELS[stage] || stage;
      });
      source.addEventListener("sources", (event) => {
        track(event);
        const sources = JSON.parse(event.data).sources || [];
        for (const s of sources) {
          (s.images || []).forEach((written, i) => {
            if (s.image_urls && s.image_urls[i]) turn.knownUrls.set(written, onService(base, s.image_urls[i]));
          });
        }
        if (sources.length && sources[0].source) {
          const dir = sources[0].source.split("/").slice(0, -1).join("/");
          turn.firstSourceDir = dir ? "/" + dir : "";
        }
        renderSources(turn, sources, base);
        markCoverage(turn, JSON.parse(event.data).coverage);
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
        renderAnswer(turn, libraries);
        if (done.standalone_question && done.standalone_question !== turn.question) {
          turn.understood.textContent = "Understood as: " + done.standalone_question;
          turn.understood.hidden = false;
        }
        const total = done.timings_ms && done.timings_ms.total;
        markCoverage(turn, done.coverage || (done.abstain ? "not_covered" : "covered"));
        turn.metaEl.textContent = (COVERAGE_LABELS[done.coverage] || (done.abstain ? COVERAGE_LABELS.not_covered : "")) +
          (done.intent ? "intent: " + done.intent : "") + (total ? " · " + Math.round(total) + " ms" : "");
        if (turn.conversationId) {
          addFeedback(turn, turn.conversationId, done.turn || turn.number);
          if (done.abstain || done.coverage === "not_covered") {
            addHandoff(turn, turn.conversationId, done.turn || turn.number,
                       "The docs don't cover this. A person from support can help.");
          }
        }
        finish(turn, source);
      });
      source.addEventListener("error", (event) => {
        if (event.data) {  // the service's own `error` event
          track(event);
          renderAnswer(turn, libraries);
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
          status.textContent = "Reconnecting…";
          window.setTimeout(() => follow(turn, streamUrl, attempt + 1), Math.min(8000, 500 * 2 ** attempt));
        } else {
          status.textContent = "Reconnecting…";
        }
      });
    }

    function ask(question) {
      // false (and a word in the status line) when the question cannot be sent as it is
      if (config.maxQuestionChars && question.length > config.maxQuestionChars) {
        status.textContent = "The question is too long (at most " + config.maxQuestionChars + " characters).";
        return false;
      }
      start(question);
      return true;
    }

    async function start(question) {
      const turn = newTurn(question);
      send.disabled = true;
      status.textContent = "Sending…";
      const chosen = labels();
      const post = (id) => fetch(base + "/conversations", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(Object.assign(id ? { question, conversation_id: id } : { question },
                                           chosen.length ? { labels: chosen } : {})),
      });
      try {
        let response;
        try {
          response = await post(conversationId);
          if (response.status === 404 && conversationId) {  // the conversation expired: start afresh
            conversationId = null;
            response = await post(null);
          }
        } catch (error) {  // network failure, or a cross-origin call this service refuses
          throw new Error(base ? "The assistant could not be reached from this page (is this site's origin " +
                                 "in the service's FIELDGUIDE_ALLOWED_ORIGINS?)." : error.message);
        }
        if (response.status !== 202) {
          const body = await response.json().catch(() => ({}));
          const detail = Array.isArray(body.detail) ? body.detail.map((d) => d.msg).join("; ") : body.detail;
          throw new Error(detail || "the service answered " + response.status);
        }
        const started = await response.json();
        turnCount = started.conversation_id === conversationId ? turnCount + 1 : 1;
        conversationId = started.conversation_id;
        turn.conversationId = conversationId;
        turn.number = turnCount;
        follow(turn, started.stream_url, 0);
      } catch (error) {
        turn.answerEl.classList.remove("streaming");
        showError(turn, error.message);
        send.disabled = false;
        status.textContent = "";
      }
    }

    function reset() {
      conversationId = null;
      turnCount = 0;
      thread.replaceChildren();
    }

    return { ask, reset };
  }

  // --- instant search: results as the reader types, in the same box that asks -------------------
  const SEARCH_DELAY_MS = 120;  // debounce: a burst of keystrokes sends one request
  const SEARCH_MIN_CHARS = 2;

  function snippetNodes(doc, html) {
    // The service escapes the snippet and adds only <mark>; parsed inert, only text and <mark> kept.
    const parsed = new DOMParser().parseFromString("<p>" + String(html || "") + "</p>", "text/html");
    const out = [];
    for (const node of parsed.body.firstChild ? parsed.body.firstChild.childNodes : []) {
      if (node.nodeType === 1 && node.tagName === "MARK") {
        const mark = doc.createElement("mark");
        mark.textContent = node.textContent;
        out.push(mark);
      } else {
        out.push(doc.createTextNode(node.textContent));
      }
    }
    return out;
  }

  function createSearchBox(options) {
    // input: the textarea; list: an element to fill with results; onAsk(text): turn it into a question;
    // labels(): the chosen doc sets. Keys: ArrowDown/ArrowUp move through the results, Enter opens the
    // one chosen (or asks when none is), Escape closes the results.
    const { input, list, base = "", onAsk } = options;
    const labels = options.labels || (() => []);
    const doc = input.ownerDocument;
    const view = doc.defaultView || window;
    let timer = null;
    let sent = 0;
    let controller = null;
    let results = [];
    let active = -1;
    list.setAttribute("role", "listbox");
    list.hidden = true;
    const listId = list.id || "fieldguide-results-" + Math.random().toString(36).slice(2);
    list.id = listId;
    input.setAttribute("aria-controls", listId);
    input.setAttribute("aria-autocomplete", "list");

    function close() {
      results = [];
      active = -1;
      list.replaceChildren();
      list.hidden = true;
      input.removeAttribute("aria-activedescendant");
      input.setAttribute("aria-expanded", "false");
    }

    function choose(index) {
      active = index;
      list.querySelectorAll("[role=option]").forEach((item, i) => {
        item.setAttribute("aria-selected", i === index ? "true" : "false");
        item.classList.toggle("active", i === index);
        if (i === index) {
          input.setAttribute("aria-activedescendant", item.id);
          if (item.scrollIntoView) item.scrollIntoView({ block: "nearest" });
        }
      });
      if (index < 0) input.removeAttribute("aria-activedescendant");
    }

    function openResult(result) {
      if (!result || !result.url) return;
      const url = /^https?:/i.test(result.url) ? result.url : base + result.url;
      view.open(url, "_blank", "noopener");
    }

    function show(found, query) {
      results = found;
      active = -1;
      list.replaceChildren();
      found.forEach((result, i) => {
        const item = doc.createElement("li");
        item.setAttribute("role", "option");
        item.id = listId + "-" + i;
        item.className = "result";
        const title = doc.createElement("span");
        title.className = "result-title";
        title.textContent = result.title || result.source;
        const crumb = doc.createElement("span");
        crumb.className = "result-breadcrumb";
        crumb.textContent = (result.label ? result.label + " · " : "") +
          [result.source].concat(result.heading_path || []).join(" › ");
        const text = doc.createElement("span");
        text.className = "result-snippet";
        text.append(...snippetNodes(doc, result.snippet));
        item.append(title, crumb, text);
        item.addEventListener("mousedown", (event) => { event.preventDefault(); openResult(result); });
        list.append(item);
      });
      const ask = doc.createElement("li");
      ask.setAttribute("role", "option");
      ask.id = listId + "-ask";
      ask.className = "result ask-option";
      ask.textContent = "Ask: " + query;
      ask.addEventListener("mousedown", (event) => { event.preventDefault(); close(); onAsk(input.value); });
      list.append(ask);
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
    }

    async function search(query) {
      const number = ++sent;
      if (controller) controller.abort();
      controller = typeof AbortController !== "undefined" ? new AbortController() : null;
      const params = new URLSearchParams({ q: query, limit: "6" });
      for (const label of labels()) params.append("label", label);
      try {
        const response = await fetch(base + "/search?" + params.toString(),
                                     controller ? { signal: controller.signal } : {});
        if (!response.ok) { if (number === sent) close(); return; }
        const body = await response.json();
        if (number !== sent || input.value.trim().length < SEARCH_MIN_CHARS) return;  // a newer one is coming
        show(body.results || [], query.trim());
      } catch (error) {
        /* aborted by a newer keystroke, or offline: the box still asks */
      }
    }

    input.addEventListener("input", () => {
      if (timer) view.clearTimeout(timer);
      const query = input.value;
      if (query.trim().length < SEARCH_MIN_CHARS) { sent++; close(); return; }
      timer = view.setTimeout(() => search(query), SEARCH_DELAY_MS);
    });
    input.addEventListener("keydown", (event) => {
      const options = list.querySelectorAll("[role=option]");
      if (event.key === "ArrowDown" && !list.hidden && options.length) {
        event.preventDefault();
        choose(active + 1 >= options.length ? 0 : active + 1);
      } else if (event.key === "ArrowUp" && !list.hidden && options.length) {
        event.preventDefault();
        choose(active <= 0 ? options.length - 1 : active - 1);
      } else if (event.key === "Escape" && !list.hidden) {
        event.preventDefault();
        event.stopPropagation();
        close();
      } else if (event.key === "Enter" && !event.shiftKey && active >= 0 && active < results.length) {
        event.preventDefault();
        event.stopImmediatePropagation();  // the form's own Enter (ask) is not wanted here
        const result = results[active];
        close();
        openResult(result);
      } else if (event.key === "Enter" && !event.shiftKey) {
        sent++;  // asking: a search still on its way must not reopen the list
        close();
      }
    });
    input.addEventListener("blur", () => view.setTimeout(close, 150));
    return { close, isOpen: () => !list.hidden };
  }

  function createLabelChoice(options) {
    // A <select> of the doc sets, shown only when the service has more than one; "" = the default set.
    const { select, base = "" } = options;
    const doc = select.ownerDocument;
    select.hidden = true;
    fetch(base + "/labels").then((r) => (r.ok ? r.json() : null)).then((body) => {
      if (!body || !Array.isArray(body.labels) || body.labels.length < 2) return;
      const all = doc.createElement("option");
      all.value = "";
      all.textContent = body.default && body.default.length ? "Default (" + body.default.join(", ") + ")" : "All doc sets";
      select.append(all);
      for (const label of body.labels) {
        const option = doc.createElement("option");
        option.value = label;
        option.textContent = label;
        select.append(option);
      }
      select.hidden = false;
    }).catch(() => { /* no choice offered: the default set */ });
    return () => (select.value ? [select.value] : []);
  }

  return { createChat, createSearchBox, createLabelChoice };
})();
