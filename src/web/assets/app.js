// The tavern dashboard. Everything shown comes from agents and is untrusted: the DOM is
// built with createElement and text nodes only (never innerHTML). Markdown bodies come
// from the server already rendered (pulldown-cmark, within size and nesting bounds) and
// cleaned (ammonia's allowlist: no script, no attribute but links to http(s)); `markdown`
// below is the one place the page parses HTML, into an inert document. Network access:
// this origin only.
"use strict";
(function () {
  const TOKEN = document.querySelector('meta[name="tavern-token"]').content;
  const main = document.getElementById("main");
  const state = {
    info: null, // /api/state
    view: "board",
    arg: "",
    params: new URLSearchParams(),
    refreshing: false,
    dirty: false,
    // A read under way was asked again: with the view (true) or only the frame (false).
    dirtyView: false,
    firstPaint: null,
    boardPer: 50,
    reviewPer: 50,
    logLimit: 100,
  };

  // ---- DOM helpers --------------------------------------------------------------------

  // h("div", {class: "x", onclick: f}, "text", child, [children]) — strings become text
  // nodes; attribute values are set as properties or attributes, never parsed as HTML.
  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(e.dataset, v);
      else if (k === "value") e.value = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    add(e, children);
    return e;
  }
  function add(e, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) add(e, c);
      else if (c instanceof Node) e.appendChild(c);
      else e.appendChild(document.createTextNode(String(c)));
    }
  }
  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
  }
  function docLink(id, text) {
    return h("a", { href: "#/doc/" + encodeURIComponent(id), class: "doclink" }, text || id);
  }
  function ago(iso) {
    if (!iso) return "";
    const t = Date.parse(iso);
    if (isNaN(t)) return String(iso);
    let s = Math.max(0, Math.round((Date.now() - t) / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 86400) return Math.floor(s / 3600) + "h";
    return Math.floor(s / 86400) + "d";
  }
  // Builds one item of a list; an item that cannot be shown says so in its place, and
  // the others are shown all the same.
  function each(items, build) {
    return items.map((item) => {
      try {
        return build(item);
      } catch (e) {
        return h("article", { class: "item broken", dataset: { id: item && item.id } },
          "This item could not be shown (", String(item && item.id), "): ", e.message);
      }
    });
  }
  function chip(text, kind) {
    return h("span", { class: "chip " + (kind || "") }, text);
  }
  // A body as the server rendered and cleaned it (body_html). Parsed into a document of
  // its own, which runs nothing and loads nothing, then moved into the page.
  function markdown(html) {
    const box = h("div", { class: "markdown" });
    const parsed = new DOMParser().parseFromString(html || "", "text/html");
    const from = parsed.body;
    while (from.firstChild) box.appendChild(from.firstChild);
    return box;
  }

  // ---- talking to the server ----------------------------------------------------------

  async function api(path) {
    const r = await fetch(path, { credentials: "same-origin", headers: { "x-tavern-token": TOKEN } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error((body.error && body.error.message) || r.status + " " + r.statusText);
    return body;
  }
  async function post(path, payload) {
    const r = await fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", "x-tavern-token": TOKEN },
      body: JSON.stringify(payload || {}),
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error((body.error && body.error.message) || r.status + " " + r.statusText);
    return body;
  }
  // Runs an action; the result (or the CLI's message for a refusal) shows in the flash
  // line, and the view is read again either way.
  async function act(path, payload, button) {
    if (button) button.disabled = true;
    try {
      const r = await post(path, payload);
      const row = button && button.closest(".row, article");
      if (row) for (const i of row.querySelectorAll("input[data-key]")) i.value = "";
      if (path.endsWith("/decide")) state.confirming = null;
      flash(r.message + (r.warnings && r.warnings.length ? " (" + r.warnings.join("; ") + ")" : ""), "ok");
    } catch (e) {
      flash(e.message, "error");
    } finally {
      if (button) button.disabled = false;
      refresh();
    }
  }
  function flash(text, kind) {
    const f = document.getElementById("flash");
    f.hidden = false;
    f.className = "flash " + kind;
    f.dataset.kind = kind;
    clear(f);
    add(f, [text, " ", h("button", { type: "button", class: "link", onclick: () => (f.hidden = true) }, "dismiss")]);
  }
  function canAct() {
    return state.info && state.info.human && !state.info.gone;
  }
  function actButton(label, onclick, cls) {
    return h("button", { type: "button", class: cls || "", disabled: !canAct(), onclick }, label);
  }

  // ---- the frame: who, live, pause ----------------------------------------------------

  async function loadState() {
    try {
      state.info = await api("/api/state");
    } catch (e) {
      state.info = null;
      banner("Cannot read the board: " + e.message);
      return;
    }
    const info = state.info;
    document.getElementById("who").textContent = info.human
      ? "acting as " + info.actor
      : info.actor
        ? info.actor + " (read-only: not under humans: in board.yaml)"
        : "read-only: nobody is named (serve with --as NAME)";
    if (info.gone) banner("The board directory " + info.board + " is gone (removed or moved). This page shows it again once it is back.");
    else banner(null);
    const paused = info.status && info.status.paused;
    const bar = document.getElementById("pausebar");
    bar.classList.toggle("paused", !!paused);
    document.getElementById("pause-state").textContent = paused ? "PAUSED: " + paused : "Running: agents may claim work";
    const reason = document.getElementById("pause-reason");
    reason.hidden = !!paused;
    const button = document.getElementById("pause-button");
    button.textContent = paused ? "Resume" : "Pause";
    button.disabled = !canAct();
  }
  function banner(text) {
    const b = document.getElementById("banner");
    b.hidden = !text;
    b.textContent = text || "";
  }
  document.getElementById("pause-button").addEventListener("click", (ev) => {
    const paused = state.info && state.info.status && state.info.status.paused;
    if (paused) act("/api/resume", {}, ev.target);
    else act("/api/pause", { reason: document.getElementById("pause-reason").value }, ev.target);
  });

  // ---- views ---------------------------------------------------------------------------

  function card(c) {
    const blocked = c.blockers.length > 0;
    return h(
      "div",
      { class: "card" + (blocked ? " blocked" : ""), dataset: { id: c.id, status: c.status } },
      h("div", { class: "card-title" }, docLink(c.id, c.title || c.id)),
      h(
        "div",
        { class: "card-meta" },
        h("span", { class: "id" }, c.id),
        c.priority !== null && c.priority !== undefined ? chip("P" + c.priority, "p" + c.priority) : null,
        c.claimed_by ? chip("@" + c.claimed_by, "who") : null,
        h("span", { class: "age", title: "created " + c.created_at }, ago(c.created_at)),
      ),
      c.depends_on.length
        ? h("div", { class: "deps" }, "needs ", c.depends_on.map((d, i) => [i ? ", " : "", docLink(d)]))
        : null,
      blocked
        ? h(
            "div",
            { class: "blockers" },
            "blocked by ",
            c.blockers.map((b, i) => [i ? ", " : "", docLink(b.id), " (", b.kind === "question" ? "question: " + b.what : b.what, ")"]),
          )
        : null,
    );
  }

  async function viewBoard() {
    const q = state.params.get("q") || "";
    const t0 = performance.now();
    const data = await api("/api/board?per=" + state.boardPer + "&q=" + encodeURIComponent(q));
    const filter = h("input", {
      type: "search",
      id: "filter",
      "data-key": "filter:board",
      value: q,
      placeholder: "filter: priority<=1 tag:parser claimed_by=coder-1 words…",
      onkeydown: (ev) => {
        if (ev.key === "Enter") {
          const p = new URLSearchParams();
          if (ev.target.value.trim()) p.set("q", ev.target.value.trim());
          location.hash = "#/board" + (p.toString() ? "?" + p : "");
        }
      },
    });
    const columns = h("div", { class: "columns" });
    for (const col of data.columns) {
      const list = h("div", { class: "cards" }, each(col.cards, card));
      const column = h(
        "section",
        { class: "column", dataset: { state: col.state } },
        h("h2", {}, col.state, " ", h("span", { class: "count" }, String(col.total))),
        list,
      );
      let shown = col.offset + col.cards.length;
      if (shown < col.total) {
        const more = h("button", { type: "button", class: "more" }, "show more (" + (col.total - shown) + ")");
        more.addEventListener("click", async () => {
          more.disabled = true;
          try {
            const next = await api(
              "/api/board?per=" + 50 + "&state=" + encodeURIComponent(col.state) + "&offset=" + shown + "&q=" + encodeURIComponent(q),
            );
            const c = next.columns[0];
            shown += c.cards.length;
            state.boardPer = Math.min(500, Math.max(state.boardPer, shown));
            // A live update may have re-read the board meanwhile, with the old count: a
            // read under way reads again, and a column already replaced is read afresh.
            if (state.refreshing) state.dirty = state.dirtyView = true;
            if (!list.isConnected) {
              refresh();
              return;
            }
            add(list, each(c.cards, card));
            if (shown >= c.total) more.remove();
            else more.textContent = "show more (" + (c.total - shown) + ")";
          } catch (e) {
            flash(e.message, "error");
          }
          more.disabled = false;
        });
        column.appendChild(more);
      }
      columns.appendChild(column);
    }
    const shownCount = data.columns.reduce((n, c) => n + c.total, 0);
    const frag = [
      h("div", { class: "toolbar" }, filter, h("span", { class: "muted" }, shownCount + " of " + data.tasks + " tasks")),
      skippedNote(data.skipped),
      columns,
    ];
    return { frag, after: () => firstPaint(t0) };
  }
  function firstPaint(t0) {
    if (state.firstPaint === null) {
      requestAnimationFrame(() => {
        state.firstPaint = Math.round(performance.now());
        document.body.dataset.firstPaint = String(state.firstPaint);
        document.body.dataset.boardRender = String(Math.round(performance.now() - t0));
      });
    }
  }
  function skippedNote(skipped) {
    if (!skipped || !skipped.length) return null;
    return h(
      "details",
      { class: "skipped" },
      h("summary", {}, skipped.length + " file(s) could not be read and are not shown"),
      h("ul", {}, skipped.map((s) => h("li", {}, s.path + ": " + s.problem))),
    );
  }

  async function viewWaiting() {
    const w = await api("/api/waiting?per=" + state.reviewPer);
    const questions = each(w.questions, (q) => {
      const text = h("input", { type: "text", class: "answer-text", placeholder: "your answer", maxlength: "10000", "data-key": "answer:" + q.id });
      return h(
        "article",
        { class: "item question", dataset: { id: q.id } },
        h("h3", {}, docLink(q.id, q.title || q.id)),
        forgedNote(q.decision),
        h("div", { class: "muted" }, q.id, " · asked by ", q.asked_by || "?", " · ", ago(q.created_at), " ago",
          q.blocks.length ? [" · blocks ", q.blocks.map((b, i) => [i ? ", " : "", docLink(b)])] : null),
        // What the body says beyond the title and the options (the server leaves out
        // the sections that only repeat them).
        q.body_html && q.body_html.trim() ? markdown(q.body_html) : null,
        q.options.length
          ? h("div", { class: "options" }, q.options.map((o) =>
              actButton(o, (ev) => act("/api/question/" + encodeURIComponent(q.id) + "/answer", { choice: o }, ev.target), "option")))
          : null,
        h("div", { class: "row" }, text, actButton("Answer", (ev) => {
          act("/api/question/" + encodeURIComponent(q.id) + "/answer", { text: text.value }, ev.target);
        })),
      );
    });
    const permissions = each(w.permissions, (p) => {
      const confirm = h("div", { class: "row confirm", hidden: true });
      const ask = (approve) => {
        state.confirming = { id: p.id, approve };
        clear(confirm);
        confirm.hidden = false;
        const typed = h("input", { type: "text", class: "confirm-id", placeholder: p.id, autocomplete: "off", "data-key": "confirm:" + p.id });
        add(confirm, [
          "Type ", h("code", {}, p.id), " to " + (approve ? "approve" : "deny") + ": ",
          typed,
          actButton("Confirm " + (approve ? "approval" : "denial"), (ev) =>
            act("/api/question/" + encodeURIComponent(p.id) + "/decide", { approve, confirm: typed.value, if_rev: p.rev }, ev.target), approve ? "approve" : "deny"),
          h("button", { type: "button", class: "link", onclick: () => { confirm.hidden = true; state.confirming = null; } }, "cancel"),
        ]);
        typed.focus();
      };
      // A live update re-renders the list: an open confirmation stays open.
      if (state.confirming && state.confirming.id === p.id) ask(state.confirming.approve);
      return h(
        "article",
        { class: "item permission", dataset: { id: p.id } },
        h("h3", {}, "Permission: ", h("code", {}, p.capability), " on ", h("code", {}, p.resource)),
        h("dl", {},
          h("dt", {}, "capability"), h("dd", {}, p.capability),
          h("dt", {}, "resource"), h("dd", {}, p.resource),
          h("dt", {}, "reason"), h("dd", {}, p.reason),
          h("dt", {}, "asked by"), h("dd", {}, (p.asked_by || "?") + ", " + ago(p.created_at) + " ago (" + p.id + ")")),
        forgedNote(p.decision),
        p.body.trim() ? h("div", { class: "preview" }, h("div", { class: "muted" }, "preview"), markdown(p.body_html)) : null,
        h("div", { class: "row" },
          actButton("Approve", () => ask(true), "approve"),
          actButton("Deny", () => ask(false), "deny")),
        confirm,
      );
    });
    const reviewItem = (t) => {
      const note = h("input", { type: "text", class: "note", placeholder: "note (for the log)", maxlength: "2000", "data-key": "note:" + t.id });
      const run = (name) => (ev) =>
        act("/api/task/" + encodeURIComponent(t.id) + "/transition", { name, note: note.value, if_rev: t.rev }, ev.target);
      return h(
        "article",
        { class: "item review", dataset: { id: t.id } },
        h("h3", {}, docLink(t.id, t.title || t.id)),
        h("div", { class: "muted" }, t.id, t.claimed_by ? " · by " + t.claimed_by : "", " · updated ", ago(t.updated_at), " ago"),
        h("div", { class: "row" }, note, actButton("Approve", run("approve"), "approve"), actButton("Reject", run("reject"), "deny")),
      );
    };
    const section = (title, items, empty, count = items.length) =>
      h("section", { class: "waiting-section" }, h("h2", {}, title, " ", h("span", { class: "count" }, String(count))),
        items.length ? items : h("p", { class: "muted" }, empty));
    // The tasks in review come a page at a time (oldest update first), as a column of the
    // board does; the count is all of them.
    const reviewList = h("div", { class: "review-list" }, each(w.review, reviewItem));
    const reviewSection = section("Tasks in review", w.review.length ? [reviewList] : [], "Nothing to review.", w.review_total);
    let shown = w.review_offset + w.review.length;
    if (shown < w.review_total) {
      const more = h("button", { type: "button", class: "more" }, "show more (" + (w.review_total - shown) + ")");
      more.addEventListener("click", async () => {
        more.disabled = true;
        try {
          const next = await api("/api/waiting?per=50&offset=" + shown);
          shown += next.review.length;
          state.reviewPer = Math.min(500, Math.max(state.reviewPer, shown));
          // As on the board: a read under way reads again, a list replaced is read afresh.
          if (state.refreshing) state.dirty = state.dirtyView = true;
          if (!reviewList.isConnected) {
            refresh();
            return;
          }
          add(reviewList, each(next.review, reviewItem));
          if (shown >= next.review_total || !next.review.length) more.remove();
          else more.textContent = "show more (" + (next.review_total - shown) + ")";
        } catch (e) {
          flash(e.message, "error");
        }
        more.disabled = false;
      });
      reviewSection.appendChild(more);
    }
    return {
      frag: [
        skippedNote(w.skipped),
        section("Permission requests", permissions, "No permission requests."),
        section("Questions", questions, "No open questions."),
        reviewSection,
      ],
    };
  }

  // Holds on files and resources (read-only): who holds what, until when, what stands in
  // whose way (waiters and recent refusals), and the line of those waiting (--wait).
  // Everything here is text other agents wrote: text nodes only.
  function holdsSection(list) {
    const refused = list.refused || [];
    if (!list.holds.length && !list.waiting.length && !refused.length) return h("p", { class: "muted" }, "Nothing is held (tavern hold).");
    const describe = (r) => (r.kind === "named" ? "resource " + r.name : r.name || ".");
    const conflicts = (x) => {
      const out = [];
      for (const w of list.waits_on) if (w.hold === x.id) out.push(w.waiter + " waits for it");
      for (const r of refused) if (r.holds.includes(x.id)) out.push(r.agent + " refused " + r.at);
      return out.join("; ");
    };
    return h("section", { class: "holds" },
      h("h2", {}, "Holds ", h("span", { class: "count" }, String(list.holds.length))),
      h("table", { class: "grid holds-table" },
        h("thead", {}, h("tr", {}, ["hold", "resource", "holder", "mode", "until", "task", "reason", "conflicts"].map((t) => h("th", {}, t)))),
        h("tbody", {}, list.holds.map((x) =>
          h("tr", { dataset: { id: x.id } },
            h("td", {}, x.owner_rule ? "owner rule" : x.id),
            h("td", {}, describe(x.resource)),
            h("td", {}, x.agent),
            h("td", {}, x.owner_rule ? "exclusive" : x.shared ? "shared" : "exclusive"),
            h("td", {}, x.until || "never"),
            h("td", {}, x.task ? docLink(x.task) : ""),
            h("td", { class: "reason" }, x.reason || ""),
            h("td", { class: "conflicts" }, conflicts(x)))))),
      list.waiting.length
        ? [h("h3", {}, "Waiting in line ", h("span", { class: "count" }, String(list.waiting.length))),
           h("table", { class: "grid waiting-table" },
             h("thead", {}, h("tr", {}, ["ticket", "agent", "wants", "mode", "since", "gives up", "waits on"].map((t) => h("th", {}, t)))),
             h("tbody", {}, list.waiting.map((w) =>
               h("tr", { dataset: { ticket: String(w.ticket), clone: w.clone || "" } },
                 h("td", {}, w.clone ? w.ticket + " on " + w.clone : String(w.ticket)),
                 h("td", {}, w.agent),
                 h("td", {}, w.resources.map(describe).join(", ")),
                 h("td", {}, w.shared ? "shared" : "exclusive"),
                 h("td", {}, w.since),
                 h("td", {}, w.until),
                 h("td", {}, list.waits_on.filter((o) => o.waiter === w.agent).map((o) => o.holder + " (" + o.resource + ")").join(", "))))))]
        : null,
      list.waits_on.length
        ? h("ul", { class: "waits" }, list.waits_on.map((w) => h("li", {}, w.waiter + " waits on " + w.holder + " (" + w.resource + ")")))
        : null,
      refused.length
        ? [h("h3", {}, "Recent refusals"),
           h("ul", { class: "refusals" }, refused.map((r) =>
             h("li", { dataset: { seq: String(r.seq) } }, h("span", { class: "when" }, r.at), " ", h("b", {}, r.agent), ": ", r.note)))]
        : null);
  }

  async function viewAgents() {
    const [rows, held] = await Promise.all([api("/api/agents"), api("/api/holds")]);
    if (!rows.length) return { frag: [h("p", { class: "muted" }, "No agent has registered (tavern agent register)."), holdsSection(held)] };
    return {
      frag: [
        h("table", { class: "grid" },
          h("thead", {}, h("tr", {}, ["agent", "status", "holds", "last seen", "capabilities"].map((t) => h("th", {}, t)))),
          h("tbody", {}, rows.map((a) =>
            h("tr", { dataset: { id: a.id } },
              h("td", {}, a.id),
              h("td", {}, chip(a.status, "agent-" + a.status)),
              h("td", {}, a.holds.map((t, i) => [i ? ", " : "", docLink(t)])),
              h("td", { title: a.last_seen }, ago(a.last_seen) + " ago"),
              h("td", {}, a.capabilities.join(", ")))))),
        holdsSection(held),
      ],
    };
  }

  const SEVERITIES = ["critical", "high", "medium", "low", "info"];
  async function viewFindings() {
    const q = state.params.get("q") || "";
    const data = await api("/api/findings?q=" + encodeURIComponent(q));
    const filter = h("input", {
      type: "search", id: "filter", "data-key": "filter:findings", value: q, placeholder: "filter: status=open topic=parser severity=high,critical",
      onkeydown: (ev) => {
        if (ev.key === "Enter") location.hash = "#/findings" + (ev.target.value.trim() ? "?q=" + encodeURIComponent(ev.target.value.trim()) : "");
      },
    });
    const groups = {};
    for (const f of data.findings) (groups[f.severity] = groups[f.severity] || []).push(f);
    const order = SEVERITIES.concat(Object.keys(groups).filter((s) => !SEVERITIES.includes(s)));
    const sections = order.filter((s) => groups[s]).map((sev) =>
      h("section", { class: "severity sev-" + sev },
        h("h2", {}, sev || "(no severity)", " ", h("span", { class: "count" }, String(groups[sev].length))),
        groups[sev].map((f) => {
          const resolution = h("input", { type: "text", class: "resolution", placeholder: "resolution", maxlength: "2000", "data-key": "resolution:" + f.id });
          const open = f.status === "open";
          const live = open || f.status === "acknowledged";
          return h("article", { class: "item finding", dataset: { id: f.id, status: f.status } },
            h("div", {}, chip(f.status, "st-" + f.status), " ", docLink(f.id, f.title || f.id)),
            h("div", { class: "muted" }, f.id, f.topic ? " · " + f.topic : "", " · by ", f.created_by || "?", " · ", ago(f.created_at), " ago",
              f.about.length ? [" · about ", f.about.map((a, i) => [i ? ", " : "", docLink(a)])] : null),
            live
              ? h("div", { class: "row" },
                  open ? actButton("Acknowledge", (ev) => act("/api/observation/" + encodeURIComponent(f.id) + "/ack", { if_rev: f.rev }, ev.target)) : null,
                  resolution,
                  actButton("Resolve", (ev) => act("/api/observation/" + encodeURIComponent(f.id) + "/resolve", { resolution: resolution.value, if_rev: f.rev }, ev.target)))
              : null);
        })));
    return {
      frag: [h("div", { class: "toolbar" }, filter), skippedNote(data.skipped),
        sections.length ? sections : h("p", { class: "muted" }, "No findings.")],
    };
  }

  // Search: what `tavern search` finds, through the same call. Every field is agent text,
  // shown as text.
  async function viewSearch() {
    const q = state.params.get("q") || "";
    const box = h("input", {
      type: "search", id: "search", "data-key": "search", value: q, placeholder: "search: lock timeout \"exact phrase\" status=open",
      onkeydown: (ev) => {
        if (ev.key === "Enter") location.hash = "#/search" + (ev.target.value.trim() ? "?q=" + encodeURIComponent(ev.target.value.trim()) : "");
      },
    });
    if (!q.trim()) return { frag: [h("div", { class: "toolbar" }, box), h("p", { class: "muted" }, "Words, \"phrases\" and filters, ranked by relevance.")] };
    let data;
    try {
      data = await api("/api/search?q=" + encodeURIComponent(q));
    } catch (e) {
      // A query the CLI refuses: its message, and the box kept to mend the query.
      return { frag: [h("div", { class: "toolbar" }, box), h("p", { class: "error" }, e.message)] };
    }
    const hits = data.hits.map((hit) =>
      h("article", { class: "item hit", dataset: { id: hit.id } },
        h("div", {}, hit.status ? chip(hit.status, "st-" + hit.status) : null, " ",
          hit.region === "solutions" ? h("span", { class: "id" }, hit.path) : docLink(hit.id, hit.title || hit.id),
          " ", h("span", { class: "muted" }, hit.id + " · " + hit.score + (hit.archived ? " · archived" : ""))),
        hit.snippets.map((s) => h("div", { class: "snippet muted" }, s.line + ": " + s.text))));
    return {
      frag: [h("div", { class: "toolbar" }, box), skippedNote(data.skipped),
        hits.length ? hits : h("p", { class: "muted" }, "Nothing matches.")],
    };
  }

  function diffView(text) {
    return h("pre", { class: "diff" }, text.split("\n").map((line) =>
      h("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "" }, line + "\n")));
  }
  function entryView(e) {
    return h("article", { class: "entry op-" + e.op, dataset: { seq: String(e.seq) } },
      h("div", { class: "entry-head" },
        h("span", { class: "seq" }, "#" + e.seq),
        h("span", { class: "when", title: e.at }, ago(e.at) + " ago"),
        h("span", { class: "actor" }, e.actor),
        e.via ? chip("via " + e.via, "via") : null,
        h("span", { class: "op" }, e.op + (e.transition ? " " + e.transition : "")),
        e.doc ? (/^(tasks|observations|questions)\//.test(e.doc) ? docLink(e.doc.replace(/^.*\//, "").replace(/\.md$/, ""), e.doc) : h("span", {}, e.doc)) : null,
        e.from || e.to ? h("span", { class: "fromto" }, (e.from || "") + " → " + (e.to || "")) : null,
        e.force ? chip("forced", "warn") : null),
      e.note ? h("div", { class: "note" }, e.note) : null,
      e.diff ? h("details", {}, h("summary", {}, "diff"), diffView(e.diff)) : null);
  }
  async function viewTimeline() {
    const p = state.params;
    const qs = new URLSearchParams();
    for (const k of ["actor", "doc", "op"]) if (p.get(k)) qs.set(k, p.get(k));
    qs.set("limit", String(state.logLimit));
    const page = await api("/api/log?" + qs);
    const input = (name, placeholder) =>
      h("input", { type: "search", name, value: p.get(name) || "", placeholder, class: "log-filter", "data-key": "log:" + name });
    const form = h("div", { class: "toolbar" }, input("actor", "actor"), input("doc", "document (id or path)"), input("op", "op (claim, edit, …)"));
    form.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      const n = new URLSearchParams();
      for (const i of form.querySelectorAll("input")) if (i.value.trim()) n.set(i.name, i.value.trim());
      location.hash = "#/timeline" + (n.toString() ? "?" + n : "");
    });
    const list = h("div", { class: "entries" }, page.entries.map(entryView));
    let more = null;
    if (page.more && page.entries.length) {
      more = h("button", { type: "button", class: "more" }, "older entries");
      more.addEventListener("click", async () => {
        more.disabled = true;
        try {
          const last = list.lastChild ? Number(list.lastChild.dataset.seq) : 0;
          const older = await api("/api/log?" + qs + "&before=" + last);
          add(list, older.entries.map(entryView));
          state.logLimit = Math.min(1000, list.childNodes.length);
          if (!older.more) more.remove();
        } catch (e) {
          flash(e.message, "error");
        }
        more.disabled = false;
      });
    }
    return {
      frag: [form, h("p", { class: "muted" }, "Newest first, following the log live. Last seq: " + page.last_seq,
        page.unreadable.length ? " · unreadable entries at lines " + page.unreadable.join(", ") : ""), list, more],
    };
  }

  // A file that claims a decision the log does not hold: it still waits for a human.
  function forgedNote(d) {
    if (!d || d.state !== "forged") return null;
    return h("p", { class: "forged" }, h("strong", {}, "Forged decision: "),
      "the file says " + d.says + ", but " + d.why + ". It counts as undecided.");
  }

  function decisionLine(d) {
    if (!d) return null;
    if (d.state === "forged") return forgedNote(d);
    const text = d.state === "open" ? "not decided yet" : d.state + " by " + d.by + " at " + d.at;
    return h("p", { class: "decision" }, "Decision (from the log): " + text);
  }

  function fieldValue(v) {
    if (v === null) return "null";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  async function viewDoc(id) {
    const d = await api("/api/doc/" + encodeURIComponent(id));
    const note = h("input", { type: "text", class: "note", placeholder: "note (for the log)", maxlength: "2000", "data-key": "note:" + d.id });
    const run = (m, force) => (ev) =>
      act("/api/task/" + encodeURIComponent(d.id) + "/transition", { name: m.name, note: note.value, if_rev: d.rev, force }, ev.target);
    // What the viewer may do: their own (or anyone's) moves as buttons; the claimant's
    // moves on a task someone else holds only as an explicit, logged override.
    const moves = d.moves || [];
    const own = moves.filter((m) => !m.force);
    const theirs = moves.filter((m) => m.force);
    const holder = d.fields && d.fields.claimed_by;
    const actions = moves.length
      ? h("div", { class: "actions" },
          h("div", { class: "row transitions" }, note, own.map((m) => actButton(m.name, run(m, false)))),
          theirs.length
            ? h("details", { class: "override" },
                h("summary", {}, "Override: " + String(holder) + " holds this task"),
                h("p", { class: "muted" }, "These moves are " + String(holder) + "'s to make. A human may force them; the log records the override."),
                h("div", { class: "row" }, theirs.map((m) => actButton("force " + m.name, run(m, true), "deny"))))
            : null)
      : null;
    const blockers = (d.blockers || []).length
      ? h("div", { class: "blockers doc-blockers" }, "Blocked by ",
          d.blockers.map((b, i) => [i ? ", " : "", b.kind === "question" ? "question " : "task ", docLink(b.id), " (", b.what, ")"]))
      : null;
    return {
      frag: [
        h("h2", { class: "doc-title" }, String(d.fields.title || d.id)),
        h("div", { class: "muted" }, d.path, " · rev ", String(d.rev), d.archived ? " · archived" : "", " · ",
          h("a", { href: "#/timeline?doc=" + encodeURIComponent(d.path) }, "history")),
        blockers,
        actions,
        decisionLine(d.decision),
        h("table", { class: "fields" }, h("tbody", {}, Object.entries(d.fields).map(([k, v]) =>
          h("tr", {}, h("th", {}, k), h("td", {}, fieldValue(v)))))),
        h("div", { class: "body" }, markdown(d.body_html)),
        h("details", { class: "raw" }, h("summary", {}, "body as on disk"), h("pre", {}, d.body)),
      ],
    };
  }

  const VIEWS = { board: viewBoard, waiting: viewWaiting, agents: viewAgents, findings: viewFindings, timeline: viewTimeline, search: viewSearch, doc: viewDoc };

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "") || "board";
    const [path, query] = raw.split("?");
    const parts = path.split("/");
    state.view = VIEWS[parts[0]] ? parts[0] : "board";
    state.arg = decodeURIComponent(parts.slice(1).join("/"));
    state.params = new URLSearchParams(query || "");
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === state.view);
  }

  // What each view shows, by the board-relative paths whose change it must read again
  // (a view not named here reads again on any change).
  const SHOWS = {
    board: ["tasks/", "questions/", "archive/"],
    waiting: ["tasks/", "questions/", "archive/", "log.yaml"],
  };
  function shows(view, paths) {
    const prefixes = SHOWS[view];
    if (!prefixes || !paths) return true;
    return paths.some((p) => p === "" || prefixes.some((x) => p.startsWith(x)));
  }

  // Reads the current view again (with `paths`, the paths a change event named: the view
  // only when it shows one of them, the frame always). At most one read is in flight;
  // changes that arrive meanwhile cause one more read when it ends.
  async function refresh(paths) {
    const withView = shows(state.view, paths);
    if (state.refreshing) {
      state.dirty = true;
      state.dirtyView = state.dirtyView || withView;
      return;
    }
    state.refreshing = true;
    state.dirtyView = withView;
    try {
      do {
        state.dirty = false;
        const view = state.dirtyView;
        state.dirtyView = false;
        await loadState();
        if (state.info && state.info.gone) {
          clear(main);
          break;
        }
        updateWaitingCount();
        if (!view && main.firstChild) continue;
        let out;
        try {
          out = await VIEWS[state.view](state.arg);
        } catch (e) {
          out = { frag: [h("p", { class: "error" }, e.message)] };
        }
        // Keep what the human is typing: a live update re-renders the view, and every
        // input with a data-key gets its text, focus and caret back.
        const saved = {};
        for (const i of main.querySelectorAll("input[data-key]")) saved[i.dataset.key] = i.value;
        const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement : null;
        const focusKey = focused && focused.dataset ? focused.dataset.key : null;
        const caret = focusKey ? [focused.selectionStart, focused.selectionEnd] : null;
        const scroll = window.scrollY;
        const fresh = h("div", { class: "view view-" + state.view });
        add(fresh, out.frag);
        for (const i of fresh.querySelectorAll("input[data-key]")) if (i.dataset.key in saved) i.value = saved[i.dataset.key];
        clear(main);
        main.appendChild(fresh);
        if (focusKey) {
          const again = fresh.querySelector('input[data-key="' + CSS.escape(focusKey) + '"]');
          if (again) {
            again.focus();
            try { again.setSelectionRange(caret[0], caret[1]); } catch (_) { /* not a text input */ }
          }
        }
        window.scrollTo(0, scroll);
        document.body.dataset.view = state.view;
        document.body.dataset.rendered = String((Number(document.body.dataset.rendered) || 0) + 1);
        if (out.after) out.after();
      } while (state.dirty);
    } finally {
      state.refreshing = false;
    }
  }

  function updateWaitingCount() {
    const n = (state.info && state.info.waiting) || 0;
    document.getElementById("waiting-count").textContent = n ? String(n) : "";
  }

  function connect() {
    const live = document.getElementById("live");
    const source = new EventSource("/api/events");
    source.addEventListener("open", () => {
      live.textContent = "live";
      live.className = "live on";
    });
    source.addEventListener("change", (ev) => {
      let paths = null;
      try {
        paths = JSON.parse(ev.data).paths;
      } catch (_) {
        // Not ours to guess: read everything again.
      }
      refresh(Array.isArray(paths) ? paths : null);
    });
    source.addEventListener("gone", () => refresh());
    source.addEventListener("back", () => refresh());
    source.addEventListener("error", () => {
      live.textContent = "reconnecting…";
      live.className = "live off";
    });
  }

  window.addEventListener("hashchange", () => {
    parseHash();
    document.getElementById("flash").hidden = true;
    state.confirming = null;
    state.boardPer = 50;
    state.reviewPer = 50;
    state.logLimit = 100;
    window.scrollTo(0, 0);
    refresh();
  });
  parseHash();
  connect();
  refresh();
})();
