// The dashboard's rough spots, as a human overseer met them: at 1400 px the eight state
// columns needed horizontal scrolling and the finished ones were cut off; a blocked task's
// page did not show the question that blocks it; a human who does not hold a task was
// offered its claimant's moves as if they were theirs; a question card showed its text and
// options twice; a dependency done and archived showed as a red "missing" blocker.
//
//   cargo build && (cd tests/browser && npm ci && npm test)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { newBoard, serve, stop, browser, shots, logEntries, WAIT } from "./serve.mjs";

let b, srv, br;

before(async () => {
  b = newBoard(["alice"]);
  const { tavern } = b;
  // A dependency done and archived (before anything else is finished).
  tavern(["new", "task", "--id", "task-base", "--title", "Base"], "planner");
  for (const m of ["claim", "start", "done"]) tavern([m, "task-base"], "coder");
  tavern(["archive"], "planner");
  assert.ok(fs.existsSync(path.join(b.board, "archive", "tasks", "task-base.md")));
  // A task in each of the eight states of the default workflow.
  const states = {
    "task-pending": [],
    "task-claimed": ["claim"],
    "task-working": ["claim", "start"],
    "task-blocked": ["claim", "start"],
    "task-review": ["claim", "start", "submit"],
    "task-done": ["claim", "start", "done"],
    "task-failed": ["claim", "start", "fail"],
    "task-cancelled": ["cancel"],
  };
  for (const [id, moves] of Object.entries(states)) {
    tavern(["new", "task", "--id", id, "--title", "A task that is " + id.slice(5)], "planner");
    for (const m of moves) tavern([m, id], "coder");
  }
  tavern(["ask", "Which database should the cache use?", "--id", "q-db", "--options", "postgres,sqlite", "--blocks", "task-blocked"], "coder");
  tavern(["new", "task", "--id", "task-next", "--title", "Next", "--depends-on", "task-base"], "planner");
  // A task alice holds herself.
  tavern(["new", "task", "--id", "task-mine", "--title", "Mine"], "planner");
  tavern(["claim", "task-mine"], "alice");
  srv = await serve(b.board, "alice");
  br = await browser(srv.origin, { width: 1400, height: 900 });
});

after(async () => {
  if (br) await br.close();
  if (srv) await stop(srv.server);
  if (b) fs.rmSync(b.tmp, { recursive: true, force: true });
});

test("at 1400 px every state column fits, the finished ones included", async () => {
  const { page } = br;
  await page.goto(srv.url);
  await page.waitForSelector('.column[data-state="cancelled"] .card', { timeout: WAIT });
  assert.equal(await page.locator(".column").count(), 8);
  const fit = await page.evaluate(() => {
    const cols = document.querySelector(".columns");
    return {
      scroll: cols.scrollWidth,
      client: cols.clientWidth,
      page: document.scrollingElement.scrollWidth,
      width: window.innerWidth,
      rights: [...document.querySelectorAll(".column")].map((c) => c.getBoundingClientRect().right),
    };
  });
  assert.ok(fit.scroll <= fit.client, `the columns scroll: ${fit.scroll} > ${fit.client}`);
  assert.ok(fit.page <= fit.width, `the page scrolls: ${fit.page} > ${fit.width}`);
  for (const r of fit.rights) assert.ok(r <= fit.width, `a column ends at ${r} of ${fit.width}`);
  for (const state of ["done", "failed", "cancelled"]) {
    assert.ok(await page.locator(`.column[data-state="${state}"] .card`).isVisible(), state);
  }
  await page.screenshot({ path: path.join(shots, "board-1400.png") });
});

test("a dependency done and archived is no blocker", async () => {
  const { page } = br;
  const next = page.locator('.column[data-state="pending"] .card[data-id="task-next"]');
  await next.waitFor({ timeout: WAIT });
  assert.equal(await next.locator(".blockers").count(), 0);
  assert.match(await next.innerText(), /needs task-base/);
  assert.ok(!(await next.getAttribute("class")).includes("blocked"));
});

test("a blocked task's page shows the question that blocks it", async () => {
  const { page } = br;
  await page.goto(srv.origin + "/#/doc/task-blocked");
  const blockers = page.locator(".doc-blockers");
  await blockers.waitFor({ timeout: WAIT });
  assert.match(await blockers.innerText(), /question q-db \(Which database should the cache use\?\)/);
  await blockers.locator('a[href="#/doc/q-db"]').click();
  await page.waitForSelector('.doc-title:has-text("Which database")', { timeout: WAIT });
});

test("a human is offered only their own moves, and the claimant's as an explicit override", async () => {
  const { page } = br;
  await page.goto(srv.origin + "/#/doc/task-working");
  await page.waitForSelector(".doc-title", { timeout: WAIT });
  // Nothing of coder's to click as if it were alice's.
  const own = await page.locator(".transitions button").allInnerTexts();
  for (const name of ["release", "block", "fail", "submit", "done"]) assert.ok(!own.includes(name), `${name} offered: ${own}`);
  const override = page.locator("details.override");
  assert.match(await override.locator("summary").innerText(), /Override: coder holds this task/);
  await override.locator("summary").click();
  await page.screenshot({ path: path.join(shots, "override.png") });
  await override.locator('button:has-text("force release")').click();
  await page.waitForSelector(".flash.ok", { timeout: WAIT });
  assert.match(fs.readFileSync(path.join(b.board, "tasks", "task-working.md"), "utf8"), /^status: pending$/m);
  const entry = logEntries(b.tavern).filter((e) => e.doc === "tasks/task-working.md").pop();
  assert.equal(entry.actor, "alice");
  assert.equal(entry.force, true);
  assert.equal(entry.via, "dashboard");
  // Her own task: its moves as plain buttons, no override.
  await page.goto(srv.origin + "/#/doc/task-mine");
  await page.waitForSelector('.transitions button:has-text("start")', { timeout: WAIT });
  assert.ok((await page.locator(".transitions button").allInnerTexts()).includes("release"));
  assert.equal(await page.locator("details.override").count(), 0);
});

test("a question card shows its text and its options once", async () => {
  const { page } = br;
  await page.goto(srv.origin + "/#/waiting");
  const card = page.locator('.question[data-id="q-db"]');
  await card.waitFor({ timeout: WAIT });
  const text = await card.innerText();
  assert.equal(text.split("Which database should the cache use?").length - 1, 1, text);
  assert.equal(text.split("postgres").length - 1, 1, text);
  assert.equal(await card.locator("button.option").count(), 2);
  await page.screenshot({ path: path.join(shots, "question-card.png") });
});
