// The dashboard in a real browser: Debian's /usr/bin/chromium, driven by playwright-core
// (which never downloads a browser of its own). Runs the real `tavern` binary on a copy of
// the example board, and checks what a person would: the example tasks show, a card moves
// when a task file changes on disk and when `tavern claim` runs in another process, a
// question is answered and a permission approved through the page (the files and the log
// say so, with the human as actor and `via: dashboard`), a refused transition shows the
// library's message in the page's words, and nothing from a hostile title or body runs. Screenshots go to
// target/web/ for a person to look at.
//
//   cargo build && (cd tests/browser && npm ci && npm test)
//
// TAVERN_BIN picks the binary (default target/debug/tavern); CHROMIUM the browser.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { stop } from "./serve.mjs";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const bin = process.env.TAVERN_BIN || path.join(repo, "target", "debug", "tavern");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = path.join(repo, "target", "web");
const WAIT = 10_000;

let tmp, project, board, server, url, context, page;
const problems = [];

function tavern(args, actor) {
  return execFileSync(bin, ["--board", board, ...args], {
    env: { ...process.env, TAVERN_AGENT: actor },
    encoding: "utf8",
  });
}

function logEntries() {
  // Through tavern's own reader, so the test does not depend on how log.yaml is laid out.
  return tavern(["log", "--json"], "tester")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}

function assertByDashboard(entry, actor, op) {
  assert.ok(entry, `a log entry for ${op}`);
  assert.equal(entry.actor, actor);
  assert.equal(entry.op, op);
  assert.equal(entry.via, "dashboard");
}

function copyDir(from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const e of fs.readdirSync(from, { withFileTypes: true })) {
    const a = path.join(from, e.name);
    const b = path.join(to, e.name);
    if (e.isDirectory()) copyDir(a, b);
    else fs.copyFileSync(a, b);
  }
}

const HOSTILE_TITLE = `<img src=x onerror="window.__pwned='title'"><script>window.__pwned='script'</script>`;
const HOSTILE_BODY = [
  "# Totally normal",
  "",
  `<img src=x onerror="window.__pwned='body'">`,
  "",
  `<script>window.__pwned='body-script'</script>`,
  "",
  "[click me](javascript:window.__pwned='link') and [fine](https://example.com/x)",
  "",
  "![tracker](http://127.0.0.1:1/pixel.png)",
  "",
  "```",
  "<b>not bold</b>",
  "```",
].join("\n");

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tavern-web-"));
  project = path.join(tmp, "project");
  board = path.join(project, ".tavern");
  copyDir(path.join(repo, ".tavern-example"), board);
  const yaml = path.join(board, "board.yaml");
  fs.writeFileSync(yaml, fs.readFileSync(yaml, "utf8").replace(/^humans: \[\]$/m, "humans: [alice]"));
  tavern(["new", "task", "--id", "task-evil", "--title", HOSTILE_TITLE, "--body", HOSTILE_BODY, "--priority", "0"], "mallory");
  tavern(["ask", "--id", "q-perm", "--permission", "deploy", "--resource", "production", "--reason", "ship the CSV export",
    "--body", "Will run:\n\n```\n./deploy.sh --env production\n```"], "coder-1");
  fs.mkdirSync(shots, { recursive: true });

  server = spawn(bin, ["serve", "--port", "0", "--board", board, "--as", "alice"], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  server.stderr.on("data", (d) => (stderr += d));
  url = await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (d) => {
      out += d;
      const m = /^tavern serve: (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+)$/m.exec(out);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`tavern serve exited ${code}: ${stderr}`)));
  });

  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "tavern-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: browserPath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
    viewport: { width: 1500, height: 900 },
  });
  page = context.pages()[0] || (await context.newPage());
  page.on("dialog", (d) => {
    problems.push("dialog: " + d.message());
    d.dismiss();
  });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  // Requests anywhere but the server itself (the page must not fetch from elsewhere).
  page.on("request", (r) => {
    if (!r.url().startsWith(new URL(url).origin)) problems.push("request to " + r.url());
  });
});

after(async () => {
  if (context) await context.close();
  await stop(server);
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const card = (state, id) => `.column[data-state="${state}"] .card[data-id="${id}"]`;

test("the board shows the example tasks in columns by state", async () => {
  await page.goto(url);
  // The secret was traded for a cookie and left the address bar.
  assert.equal(new URL(page.url()).search, "");
  await page.waitForSelector(card("pending", "task-csv5"), { timeout: WAIT });
  await page.waitForSelector("#live.on", { timeout: WAIT });
  for (const [state, id] of [["done", "task-csv1"], ["review", "task-csv2"], ["working", "task-csv3"], ["blocked", "task-csv6"], ["claimed", "task-csv8"]]) {
    assert.equal(await page.locator(card(state, id)).count(), 1, `${id} in ${state}`);
  }
  const csv4 = await page.locator(card("pending", "task-csv4")).innerText();
  assert.match(csv4, /Golden-file tests/);
  assert.match(csv4, /blocked by task-csv2 \(review\), task-csv3 \(working\)/);
  const csv8 = await page.locator(card("claimed", "task-csv8")).innerText();
  assert.match(csv8, /@coder-1/);
  assert.match(csv8, /P2/);
  const firstPaint = Number(await page.evaluate(() => document.body.dataset.firstPaint));
  assert.ok(firstPaint > 0, "first paint measured");
  console.log(`first paint of the example board: ${firstPaint} ms after navigation`);
  await page.screenshot({ path: path.join(shots, "board.png"), fullPage: true });
});

test("a card moves when a task file changes on disk", async () => {
  const file = path.join(board, "tasks", "task-csv4.md");
  const text = fs.readFileSync(file, "utf8");
  // As an editor saves: a new file renamed over the old one.
  fs.writeFileSync(file + ".swp.md", text.replace(/^status: pending$/m, "status: cancelled"));
  fs.renameSync(file + ".swp.md", file);
  await page.waitForSelector(card("cancelled", "task-csv4"), { timeout: WAIT });
  assert.equal(await page.locator(card("pending", "task-csv4")).count(), 0);
});

test("a card moves when `tavern claim` runs in another process", async () => {
  tavern(["claim", "task-csv5"], "coder-3");
  await page.waitForSelector(card("claimed", "task-csv5"), { timeout: WAIT });
  assert.match(await page.locator(card("claimed", "task-csv5")).innerText(), /@coder-3/);
  await page.screenshot({ path: path.join(shots, "board-after-claim.png"), fullPage: true });
});

test("a hand edit reaches the open page once, in the first read of the board after it", async () => {
  // A page of its own, settled: its first read and the one the stream's first event asks
  // for (two renders), then nothing until the edits below.
  const fresh = await context.newPage();
  const reads = { board: [], state: 0 };
  fresh.on("response", (r) => {
    const p = new URL(r.url()).pathname;
    if (p === "/api/board") reads.board.push(r.json());
    if (p === "/api/state") reads.state++;
  });
  try {
    await fresh.goto(new URL(url).origin + "/#/board");
    await fresh.waitForSelector("#live.on", { timeout: WAIT });
    await fresh.waitForFunction(() => document.body.dataset.rendered === "2", null, { timeout: WAIT });
    const settled = { board: reads.board.length, state: reads.state };
    // Saved as an editor saves: a dot file renamed over the task.
    const save = (id, title) => {
      const file = path.join(board, "tasks", id + ".md");
      const text = fs.readFileSync(file, "utf8");
      const tmp = path.join(board, "tasks", "." + id + ".md.tmp");
      fs.writeFileSync(tmp, text.replace(/^title: .*$/m, "title: " + title));
      fs.renameSync(tmp, file);
    };
    const shows = (id, title) =>
      fresh.waitForFunction(
        ([id, title]) => [...document.querySelectorAll(`.card[data-id="${id}"]`)].some((c) => c.innerText.includes(title)),
        [id, title],
        { timeout: WAIT },
      );
    save("task-csv9", "Edited by hand, once");
    await shows("task-csv9", "Edited by hand, once");
    // A change the board does not show (a note under solutions/): the frame is read again,
    // not the board.
    const stateBefore = reads.state;
    fs.mkdirSync(path.join(board, "solutions", "task-csv9"), { recursive: true });
    fs.writeFileSync(path.join(board, "solutions", "task-csv9", "notes.md"), "A note.\n");
    for (const end = Date.now() + WAIT; reads.state === stateBefore && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
    assert.ok(reads.state > stateBefore, "the note's change reached the page");
    // A second edit: once it shows, every event of the first has been delivered.
    save("task-csv1", "Edited by hand, twice");
    await shows("task-csv1", "Edited by hand, twice");
    const bodies = await Promise.all(reads.board.slice(settled.board));
    assert.equal(bodies.length, 2, "one read of the board per edit, none for the note");
    const title = (view, id) => view.columns.flatMap((c) => c.cards).find((c) => c.id === id).title;
    assert.equal(title(bodies[0], "task-csv9"), "Edited by hand, once", "the first read after the edit holds it");
    assert.equal(title(bodies[1], "task-csv1"), "Edited by hand, twice");
  } finally {
    await fresh.close();
  }
});

test("the board filters by the query language", async () => {
  await page.fill("#filter", "tag:security priority<=1");
  await page.press("#filter", "Enter");
  await page.waitForFunction(() => document.querySelectorAll(".card").length === 1, null, { timeout: WAIT });
  assert.equal(await page.locator(card("pending", "task-csv9")).count(), 1);
  await page.goto(new URL(url).origin + "/#/board");
  await page.waitForSelector(card("pending", "task-evil"), { timeout: WAIT });
});

test("a question is answered through the page", async () => {
  await page.click('a[data-view="waiting"]');
  const q = '.question[data-id="q-dep1"]';
  await page.waitForSelector(q, { timeout: WAIT });
  await page.screenshot({ path: path.join(shots, "waiting.png"), fullPage: true });
  await page.click(`${q} button.option:has-text("yes: add csv 1.3")`);
  await page.waitForSelector(".flash.ok", { timeout: WAIT });
  assert.match(await page.locator(".flash").innerText(), /answered q-dep1; unblocked task-csv6/);
  await page.waitForSelector(q, { state: "detached", timeout: WAIT });
  const doc = fs.readFileSync(path.join(board, "questions", "q-dep1.md"), "utf8");
  assert.match(doc, /^status: answered$/m);
  assert.match(doc, /^answer: "yes: add csv 1\.3"$/m);
  assert.match(doc, /^answered_by: alice$/m);
  const entry = logEntries().find((e) => e.doc === "questions/q-dep1.md" && e.to === "answered");
  assertByDashboard(entry, "alice", "edit");
  // Answering unblocked the task it blocked, also as alice from the dashboard.
  const unblock = logEntries().find((e) => e.doc === "tasks/task-csv6.md" && e.transition === "unblock");
  assertByDashboard(unblock, "alice", "transition");
});

test("a permission is approved through the page, confirmed by typing its id", async () => {
  const p = '.permission[data-id="q-perm"]';
  await page.waitForSelector(p, { timeout: WAIT });
  const text = await page.locator(p).innerText();
  for (const s of ["deploy", "production", "ship the CSV export", "./deploy.sh --env production"]) assert.ok(text.includes(s), s);
  await page.click(`${p} > .row button.approve`);
  await page.waitForSelector(`${p} .confirm-id`, { timeout: WAIT });
  // A wrong confirmation is refused with the library's message, and logged.
  await page.fill(`${p} .confirm-id`, "q-nope");
  await page.click(`${p} .confirm button.approve`);
  await page.waitForSelector(".flash.error", { timeout: WAIT });
  assert.match(await page.locator(".flash").innerText(), /confirmation did not match/);
  assert.match(fs.readFileSync(path.join(board, "questions", "q-perm.md"), "utf8"), /^status: open$/m);
  await page.click(`${p} > .row button.approve`);
  await page.fill(`${p} .confirm-id`, "q-perm");
  await page.screenshot({ path: path.join(shots, "permission.png"), fullPage: true });
  await page.click(`${p} .confirm button.approve`);
  await page.waitForSelector(".flash.ok", { timeout: WAIT });
  assert.match(await page.locator(".flash").innerText(), /approved q-perm/);
  const doc = fs.readFileSync(path.join(board, "questions", "q-perm.md"), "utf8");
  assert.match(doc, /^status: approved$/m);
  assert.match(doc, /^decided_by: alice$/m);
  const entry = logEntries().find((e) => e.doc === "questions/q-perm.md" && e.to === "approved");
  assertByDashboard(entry, "alice", "edit");
});

test("a decision forged by hand shows as forged, and a human decides it", async () => {
  tavern(["ask", "--id", "q-forged", "--permission", "network", "--resource", "github.com", "--reason", "fetch"], "coder-1");
  const file = path.join(board, "questions", "q-forged.md");
  fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/^status: open$/m, "status: approved\ndecided_by: alice"));
  await page.goto(new URL(url).origin + "/#/waiting");
  const p = '.permission[data-id="q-forged"]';
  await page.waitForSelector(`${p} .forged`, { timeout: WAIT });
  assert.equal(
    await page.locator(`${p} .forged`).innerText(),
    "Forged decision: the file says approved by alice, but the log holds no approve or deny of it by a human. It counts as undecided.",
  );
  await page.screenshot({ path: path.join(shots, "forged.png"), fullPage: true });
  await page.click(`${p} > .row button.deny`);
  await page.fill(`${p} .confirm-id`, "q-forged");
  await page.click(`${p} .confirm button.deny`);
  // (The previous test's flash may still show: wait for this one's.)
  await page.waitForSelector(".flash.ok:has-text('denied q-forged')", { timeout: WAIT });
  await page.goto(new URL(url).origin + "/#/doc/q-forged");
  await page.waitForSelector(".decision", { timeout: WAIT });
  assert.match(await page.locator(".decision").innerText(), /^Decision \(from the log\): denied by alice at /);
  assert.equal(await page.locator("main .forged").count(), 0);
});

test("a refused transition shows the library's message in the page's words and the page stays usable", async () => {
  // task-csv9 waits for task-csv2 (in review): claiming it is refused.
  await page.goto(new URL(url).origin + "/#/doc/task-csv9");
  await page.waitForSelector(".transitions button:has-text('claim')", { timeout: WAIT });
  await page.click(".transitions button:has-text('claim')");
  await page.waitForSelector(".flash.error", { timeout: WAIT });
  let cli = "";
  try {
    tavern(["claim", "task-csv9"], "alice");
  } catch (e) {
    cli = String(e.stderr).replace(/^error: /, "").trim();
  }
  assert.match(cli, /not claimable yet/, "the CLI refuses too");
  assert.equal((await page.locator(".flash").innerText()).replace(/\s*dismiss$/, ""), cli);
  // Still usable: another view renders.
  await page.click('a[data-view="findings"]');
  await page.waitForSelector('.finding[data-id="obs-inj1"]', { timeout: WAIT });
  await page.screenshot({ path: path.join(shots, "findings.png"), fullPage: true });
});

test("nothing from a hostile title or body runs", async () => {
  await page.goto(new URL(url).origin + "/#/doc/task-evil");
  await page.waitForSelector(".doc-title", { timeout: WAIT });
  assert.equal(await page.locator(".doc-title").innerText(), HOSTILE_TITLE);
  assert.equal(await page.locator("main img, main script").count(), 0);
  assert.equal(await page.locator('main a[href^="javascript"]').count(), 0);
  assert.equal(await page.locator('main a[href="https://example.com/x"]').count(), 1);
  assert.match(await page.locator(".body").innerText(), /<img src=x onerror=/);
  assert.match(await page.locator(".body pre").innerText(), /<b>not bold<\/b>/);
  await page.screenshot({ path: path.join(shots, "hostile.png"), fullPage: true });
  await page.goto(new URL(url).origin + "/#/board");
  await page.waitForSelector(card("pending", "task-evil"), { timeout: WAIT });
  await page.click('a[data-view="timeline"]');
  await page.waitForSelector(".entry", { timeout: WAIT });
  await page.screenshot({ path: path.join(shots, "timeline.png"), fullPage: true });
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(problems, []);
});

test("the board directory disappearing is said, and its return shown", async () => {
  await page.goto(new URL(url).origin + "/#/board");
  await page.waitForSelector(card("claimed", "task-csv5"), { timeout: WAIT });
  const away = board + "-away";
  fs.renameSync(board, away);
  await page.waitForSelector("#banner:not([hidden])", { timeout: WAIT });
  assert.match(await page.locator("#banner").innerText(), /is gone/);
  fs.renameSync(away, board);
  await page.waitForSelector("#banner[hidden]", { state: "attached", timeout: WAIT });
  await page.waitForSelector(card("claimed", "task-csv5"), { timeout: WAIT });
});

test("Pause and Resume from the page", async () => {
  await page.click("#pause-button");
  await page.waitForSelector(".pausebar.paused", { timeout: WAIT });
  assert.ok(fs.existsSync(path.join(board, "control", "PAUSE")));
  await page.click("#pause-button");
  await page.waitForSelector(".pausebar:not(.paused)", { timeout: WAIT });
  assert.ok(!fs.existsSync(path.join(board, "control", "PAUSE")));
  const ops = logEntries().filter((e) => (e.op === "pause" || e.op === "resume") && e.via === "dashboard" && e.actor === "alice");
  assert.equal(ops.length, 2);
});

test("a 10,000-task board shows 50 cards per column, 50 tasks in review, and more on request", async () => {
  const big = path.join(tmp, "big");
  const bigBoard = path.join(big, ".tavern");
  fs.mkdirSync(big, { recursive: true });
  execFileSync(bin, ["init", big], { encoding: "utf8" });
  const states = ["pending", "pending", "pending", "claimed", "working", "review", "done", "done"];
  for (let i = 0; i < 10_000; i++) {
    const id = `task-${String(i).padStart(5, "0")}`;
    const status = states[i % states.length];
    const claimed = status === "pending" || status === "done" ? "" : `claimed_by: coder-${i % 4}\n`;
    fs.writeFileSync(
      path.join(bigBoard, "tasks", id + ".md"),
      `---\nid: ${id}\ntitle: Task number ${i}\nstatus: ${status}\npriority: ${i % 5}\ntags: [t${i % 10}]\n${claimed}created_at: 2026-11-20T10:00:00Z\ncreated_by: planner\nupdated_at: 2026-11-20T10:00:00Z\nrev: 1\n---\n\nBody of task ${i}.\n`,
    );
  }
  const big_server = spawn(bin, ["serve", "--port", "0", "--board", bigBoard, "--as", "alice"], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const bigUrl = await new Promise((resolve, reject) => {
      let out = "";
      big_server.stdout.on("data", (d) => {
        out += d;
        const m = /^tavern serve: (\S+)$/m.exec(out);
        if (m) resolve(m[1]);
      });
      big_server.on("exit", (code) => reject(new Error("tavern serve exited " + code)));
    });
    const fresh = await context.newPage();
    await fresh.goto(bigUrl);
    await fresh.waitForSelector(card("pending", "task-00000"), { timeout: 60_000 });
    await fresh.waitForFunction(() => document.body.dataset.firstPaint, null, { timeout: 60_000 });
    const firstPaint = Number(await fresh.evaluate(() => document.body.dataset.firstPaint));
    console.log(`first paint of a 10000-task board: ${firstPaint} ms after navigation`);
    assert.equal(await fresh.locator(".column").count(), 8);
    assert.equal(await fresh.locator(".card").count(), 50 * 5, "50 cards in each of the 5 non-empty columns");
    assert.equal(await fresh.locator('.column[data-state="pending"] h2 .count').innerText(), "3750");
    await fresh.click('.column[data-state="pending"] button.more');
    await fresh.waitForFunction(() => document.querySelectorAll('.column[data-state="pending"] .card').length >= 100, null, { timeout: 60_000 }).catch(async (e) => {
      console.log("cards:", await fresh.locator('.column[data-state="pending"] .card').count(), await fresh.locator(".flash").innerText().catch(() => ""));
      throw e;
    });
    await fresh.screenshot({ path: path.join(shots, "board-10k.png") });
    // Waiting on you: the 1,250 tasks in review come 50 at a time too, the count whole.
    await fresh.click('a[data-view="waiting"]');
    await fresh.waitForSelector(".review", { timeout: 60_000 });
    assert.equal(await fresh.locator("#waiting-count").innerText(), "1250");
    assert.equal(await fresh.locator(".waiting-section:has(.review) h2 .count").innerText(), "1250");
    assert.equal(await fresh.locator(".review").count(), 50);
    assert.equal(await fresh.locator(".waiting-section button.more").innerText(), "show more (1200)");
    await fresh.click(".waiting-section button.more");
    await fresh.waitForFunction(() => document.querySelectorAll(".review").length >= 100, null, { timeout: 60_000 });
    assert.equal(await fresh.locator(".review").count(), 100);
    assert.equal(await fresh.locator(".waiting-section button.more").innerText(), "show more (1150)");
    // No task twice: the second page follows the first.
    const ids = await fresh.locator(".review").evaluateAll((items) => items.map((e) => e.dataset.id));
    assert.equal(new Set(ids).size, 100);
    await fresh.close();
  } finally {
    await stop(big_server);
  }
});
