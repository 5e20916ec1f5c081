// The fieldguide chat page: the page's own form around the shared chat (chat.js).
//
// The page's CSP forbids inline script as a second line of defence behind chat.js's
// sanitising; marked and DOMPurify are the page's own copies (/vendor/).
"use strict";

(function () {
  const config = JSON.parse(document.body.dataset.config || "{}");
  const form = document.getElementById("ask");
  const input = document.getElementById("question");
  const haveRenderer = () => typeof window.marked !== "undefined" && typeof window.DOMPurify !== "undefined";
  const labels = FieldguideChat.createLabelChoice({ select: document.getElementById("labels") });
  const chat = FieldguideChat.createChat({
    thread: document.getElementById("thread"),
    status: document.getElementById("status"),
    send: document.getElementById("send"),
    config,
    labels,
    libraries: () => (haveRenderer() ? { marked: window.marked, DOMPurify: window.DOMPurify } : null),
  });
  // The same box searches as the reader types; Enter (or Ask) turns the text into a question.
  FieldguideChat.createSearchBox({
    input, labels, list: document.getElementById("search-results"),
    onAsk: () => form.requestSubmit(),
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    if (chat.ask(question)) input.value = "";
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  document.getElementById("new-conversation").addEventListener("click", () => {
    chat.reset();
    input.focus();
  });
})();
