// The fieldguide console: charts of the stored turns for the docs team.
//
// The page holds no data. It asks for the console token once per tab, keeps it in
// sessionStorage (this tab only, gone when the tab closes), and calls /console/api/* with
// `Authorization: Bearer <token>`: the token never goes into a URL. Readers' questions come
// back as data and are only ever put into the page as text (textContent) or drawn on a canvas.
// CSV exports are fetched the same way and saved from a blob.
"use strict";

(function () {
  const TOKEN_KEY = "fieldguide.console.token";
  const COLOURS = { covered: "#2da44e", partial: "#d4a72c", not_covered: "#cf222e", up: "#2da44e",
                    down: "#8250df", questions: "#1f6feb", errors: "#cf222e", missing: "#cf222e",
                    not_found: "#bc4c00", disliked: "#8250df", requests: "#1f6feb", delivered: "#2da44e",
                    pending: "#d4a72c", failed: "#cf222e", stale: "#bc4c00" };
  const VERDICT_LABELS = { covered: "Answered", partial: "Closest match", not_covered: "Not covered" };
  const $ = (id) => document.getElementById(id);
  const charts = {};

  class Unauthorized extends Error {}

  function token() { return window.sessionStorage.getItem(TOKEN_KEY); }

  function days() { return Number($("days").value) || 30; }

  async function api(path) {
    const response = await fetch("/console/api/" + path + (path.includes("?") ? "&" : "?") + "days=" + days(), {
      headers: { Authorization: "Bearer " + token() },
      cache: "no-store",
      credentials: "omit",
    });
    if (response.status === 401) throw new Unauthorized("the token was not accepted");
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.detail || "the service answered " + response.status);
    }
    return response;
  }

  function showSignIn(message) {
    $("dashboard").hidden = true;
    $("controls").hidden = true;
    $("sign-in").hidden = false;
    const error = $("sign-in-error");
    error.textContent = message || "";
    error.hidden = !message;
    $("token").focus();
  }

  function draw(id, config) {
    if (typeof window.Chart === "undefined") {  // the library is not installed: the lists still show
      $(id).replaceWith(Object.assign(document.createElement("p"), {
        className: "muted", textContent: "Charts need Chart.js: run `npm ci --prefix fieldguide/web`." }));
      return;
    }
    if (charts[id]) charts[id].destroy();
    config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false,
                                     interaction: { mode: "index", intersect: false } }, config.options || {});
    charts[id] = new window.Chart($(id), config);
  }

  function perDay(id, body, series, stacked) {
    draw(id, {
      type: "bar",
      data: {
        labels: body.rows.map((r) => r.day),
        datasets: series.map(([key, label]) => ({ label, data: body.rows.map((r) => r[key]),
                                                  backgroundColor: COLOURS[key] })),
      },
      options: { scales: { x: { stacked }, y: { stacked, beginAtZero: true, ticks: { precision: 0 } } } },
    });
  }

  function card(value, label, kind) {
    const el = document.createElement("div");
    el.className = "card" + (kind ? " " + kind : "");
    const number = document.createElement("b");
    number.textContent = value;
    const text = document.createElement("span");
    text.textContent = label;
    el.append(number, text);
    return el;
  }

  function percent(part, whole) { return whole ? Math.round((100 * part) / whole) + "%" : "–"; }

  function renderSummary(summary) {
    $("period").textContent = "From " + summary.from + " to " + summary.to + " (UTC days).";
    const c = summary.coverage;
    const answered = c.covered + c.partial + c.not_covered;
    const h = summary.handoffs;
    $("cards").replaceChildren(
      card(summary.questions.questions, "questions"),
      card(percent(c.covered, answered), "answered (" + c.covered + ")", "covered"),
      card(percent(c.partial, answered), "closest match (" + c.partial + ")", "partial"),
      card(percent(c.not_covered, answered), "not covered (" + c.not_covered + ")", "not_covered"),
      card(summary.feedback.up, "thumbs up", "covered"),
      card(summary.feedback.down, "thumbs down", "down"),
      card(h.requests, summary.handoff_targets.length ? "handoffs (" + h.pending + " pending)" : "handoffs (off)"),
    );
  }

  function text(tag, value, className) {
    const el = document.createElement(tag);
    el.textContent = value;
    if (className) el.className = className;
    return el;
  }

  function renderGaps(body) {
    $("gaps-note").textContent = body.problem_turns + " of " + body.turns +
      " answered turns needed attention (abstained, weakly supported or voted down).";
    const clusters = body.clusters;
    draw("chart-gaps", {
      type: "bar",
      data: {
        labels: clusters.map((c) => (c.question.length > 60 ? c.question.slice(0, 59) + "…" : c.question)),
        datasets: [{ label: "turns", data: clusters.map((c) => c.count),
                     backgroundColor: clusters.map((c) => COLOURS[c.kind] || "#888") }],
      },
      options: { indexAxis: "y", plugins: { legend: { display: false } },
                 scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    $("gap-list").replaceChildren(...clusters.map((c) => {
      const item = document.createElement("li");
      const head = document.createElement("div");
      head.append(text("span", c.title, "kind " + c.kind), text("strong", c.question), text("span", " (" + c.count + ")"));
      item.append(head);
      if (c.tasks.length) {
        const tasks = document.createElement("div");
        tasks.append("Sections: ");
        c.tasks.forEach((task, i) => { if (i) tasks.append(", "); tasks.append(text("code", task)); });
        item.append(tasks);
      }
      item.append(text("div", c.action, "action"));
      return item;
    }));
  }

  function renderStale(body) {
    $("stale-note").textContent = body.answers.length + " stored answers cite sections that changed or " +
      "disappeared since they were given (index version " + body.index_version + ").";
    draw("chart-stale", {
      type: "bar",
      data: { labels: body.by_source.map((s) => s.source),
              datasets: [{ label: "stale answers", data: body.by_source.map((s) => s.answers),
                           backgroundColor: COLOURS.stale }] },
      options: { indexAxis: "y", plugins: { legend: { display: false } },
                 scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    $("stale-list").replaceChildren(...body.answers.slice(0, 50).map((a) => {
      const item = document.createElement("li");
      item.append(text("strong", a.question), text("span", " (" + a.turn + ")"));
      const where = document.createElement("div");
      a.sections.forEach((s, i) => { if (i) where.append(", "); where.append(text("code", s.section), " " + s.change); });
      item.append(where);
      return item;
    }));
  }

  async function panel(name, render) {
    const section = $("chart-" + name).closest(".panel");
    const area = section.querySelector(".chart");
    for (const old of section.querySelectorAll(".load-error")) old.remove();
    try {
      render(await (await api(name)).json());
      area.hidden = false;
    } catch (error) {
      if (error instanceof Unauthorized) throw error;
      area.hidden = true;
      section.append(text("p", "Could not load: " + error.message, "error load-error"));
    }
  }

  async function load() {
    $("status").textContent = "Loading…";
    try {
      renderSummary(await (await api("summary")).json());
      $("sign-in").hidden = true;
      $("dashboard").hidden = false;
      $("controls").hidden = false;
      await Promise.all([
        panel("questions", (b) => perDay("chart-questions", b, [["questions", "questions"], ["errors", "errors"]], false)),
        panel("coverage", (b) => perDay("chart-coverage", b,
          Object.entries(VERDICT_LABELS), true)),
        panel("feedback", (b) => perDay("chart-feedback", b, [["up", "thumbs up"], ["down", "thumbs down"]], false)),
        panel("handoffs", (b) => perDay("chart-handoffs", b,
          [["delivered", "delivered"], ["pending", "pending"], ["failed", "failed"]], true)),
        panel("gaps", renderGaps),
        panel("stale", renderStale),
      ]);
      $("status").textContent = "";
    } catch (error) {
      $("status").textContent = "";
      if (error instanceof Unauthorized) {
        window.sessionStorage.removeItem(TOKEN_KEY);
        showSignIn("That token was not accepted.");
      } else {
        $("status").textContent = "Could not load the console: " + error.message;
      }
    }
  }

  async function downloadCsv(name) {
    try {
      const blob = await (await api(name + ".csv")).blob();
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = "fieldguide-" + name + "-" + days() + "d.csv";
      document.body.append(link);
      link.click();
      link.remove();
      window.setTimeout(() => URL.revokeObjectURL(link.href), 10000);
    } catch (error) {
      if (error instanceof Unauthorized) showSignIn("That token was not accepted.");
      else $("status").textContent = "Could not export: " + error.message;
    }
  }

  $("sign-in").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("token").value.trim();
    if (!value) return;
    window.sessionStorage.setItem(TOKEN_KEY, value);
    $("token").value = "";
    load();
  });
  $("sign-out").addEventListener("click", () => {
    window.sessionStorage.removeItem(TOKEN_KEY);
    Object.values(charts).forEach((chart) => chart.destroy());
    showSignIn("");
  });
  $("days").addEventListener("change", load);
  $("refresh").addEventListener("click", load);
  for (const button of document.querySelectorAll("button.csv")) {
    button.addEventListener("click", () => downloadCsv(button.dataset.csv));
  }

  if (token()) load(); else showSignIn("");
})();
