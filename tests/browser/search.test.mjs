// The dashboard's search box in a real browser: a query typed into it shows the hits of
// `tavern search` (the same call) with their snippets, as text: agent-written markup in a
// title or a body (an <img onerror>, a <script>) shows as the characters it is made of,
// and nothing runs or loads. A filter (`region:observations`) narrows the hits, a query
// that finds nothing says so, and a query of filters alone shows the CLI's usage message.
//
//   cargo build && (cd tests/browser && npm ci && npm test)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { newBoard, serve, stop, browser, shots, WAIT } from "./serve.mjs";

let b, srv, br;

const IMG = `<img src=x onerror="window.__pwned='search-body'">`;
const TITLE_IMG = `<img src=x onerror="window.__pwned='search-title'">`;
const SCRIPT = `<script>window.__pwned='search-script'</script>`;

before(async () => {
  b = newBoard(["alice"]);
  const { tavern } = b;
  const body = (name, text) => {
    const file = path.join(b.tmp, name);
    fs.writeFileSync(file, text);
    return file;
  };
  tavern(
    ["post", "Lock timeout in sync", "--id", "obs-lock", "--topic", "sync", "--severity", "high",
      "--body-file", body("obs-lock.md", `Seen twice.\n\nThe lock timed out after 30s ${IMG}\n`)],
    "mallory",
  );
  tavern(
    ["new", "task", "--id", "task-lock", "--title", `Fix the lock timeouts ${TITLE_IMG}`,
      "--body-file", body("task-lock.md", `## Goal\n\nNo lock timeout in sync ${SCRIPT}\n`)],
    "mallory",
  );
  tavern(["new", "task", "--id", "task-other", "--title", "Write the release notes"], "planner");
  srv = await serve(b.board, "alice");
  br = await browser(srv.origin);
});

after(async () => {
  if (br) await br.close();
  if (srv) await stop(srv.server);
  if (b) fs.rmSync(b.tmp, { recursive: true, force: true });
});

/// Types `query` into the search box and presses Enter; waits for the view to show it.
async function searchFor(page, query) {
  const rendered = Number(await page.evaluate(() => document.body.dataset.rendered || 0));
  await page.fill("#search", query);
  await page.press("#search", "Enter");
  await page.waitForFunction(
    ([q, n]) =>
      Number(document.body.dataset.rendered || 0) > n &&
      document.body.dataset.view === "search" &&
      new URLSearchParams(location.hash.split("?")[1] || "").get("q") === q,
    [query, rendered],
    { timeout: WAIT },
  );
}

/// The ids of the hits shown, in order.
async function hitIds(page) {
  return page.locator("article.hit").evaluateAll((els) => els.map((e) => e.dataset.id));
}

/// Runs `check` until it passes (a live update may render the view once more while a
/// search is shown), failing with its last error after a generous deadline.
async function eventually(check) {
  const deadline = Date.now() + WAIT;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

test("the search box shows ranked hits with snippets as text, narrows by a filter, says when nothing matches", async () => {
  const { page, problems } = br;
  await page.goto(srv.url);
  await page.click('#nav a[data-view="search"]');
  await page.waitForSelector("#search", { timeout: WAIT });
  assert.match(await page.locator("main").innerText(), /ranked by relevance/);

  // Words: both documents about the lock timeout, and not the unrelated one.
  await searchFor(page, "lock timeout");
  await eventually(async () => assert.deepEqual([...(await hitIds(page))].sort(), ["obs-lock", "task-lock"]));
  // The box keeps the query.
  assert.equal(await page.inputValue("#search"), "lock timeout");
  const obs = page.locator('article.hit[data-id="obs-lock"]');
  const task = page.locator('article.hit[data-id="task-lock"]');
  // Snippets: the matching lines, with their numbers, the agent's markup as text.
  const obsText = await obs.innerText();
  assert.ok(obsText.includes("Lock timeout in sync"), obsText);
  const snippets = await obs.locator(".snippet").allInnerTexts();
  assert.equal(snippets.length, 1, JSON.stringify(snippets));
  assert.match(snippets[0], /^\d+: The lock timed out after 30s /);
  assert.ok(snippets[0].endsWith(IMG), snippets[0]);
  const taskText = await task.innerText();
  assert.ok(taskText.includes(`Fix the lock timeouts ${TITLE_IMG}`), taskText);
  assert.ok(taskText.includes(`No lock timeout in sync ${SCRIPT}`), taskText);
  // The title links to the document.
  assert.equal(await task.locator("a.doclink").getAttribute("href"), "#/doc/task-lock");
  await page.screenshot({ path: path.join(shots, "search.png") });
  // Nothing ran, nothing was made an element.
  assert.equal(await page.locator("main img, main script, main iframe").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);

  // A filter narrows the hits to the findings.
  await searchFor(page, "lock timeout region:observations");
  await eventually(async () => assert.deepEqual(await hitIds(page), ["obs-lock"]));
  await searchFor(page, "lock timeout region:tasks");
  await eventually(async () => assert.deepEqual(await hitIds(page), ["task-lock"]));

  // A phrase holds only where its words follow each other.
  await searchFor(page, '"timed out"');
  await eventually(async () => assert.deepEqual(await hitIds(page), ["obs-lock"]));

  // Nothing found: the view says so.
  await searchFor(page, "zeppelin");
  await eventually(async () => assert.match(await page.locator("main").innerText(), /Nothing matches\./));
  assert.equal(await page.locator("article.hit").count(), 0);

  // Filters alone are a usage error: the library's message shows, in the page's words.
  await searchFor(page, "region:observations");
  await eventually(async () => assert.match(await page.locator("main p.error").innerText(), /search needs words to look for/));
  assert.equal(await page.locator("article.hit").count(), 0);

  // A document changed on disk is found by its new words at the next search.
  const file = path.join(b.board, "tasks", "task-other.md");
  fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("Write the release notes", "Write the zeppelin notes"));
  await searchFor(page, "zeppelin notes");
  await eventually(async () => assert.deepEqual(await hitIds(page), ["task-other"]));

  assert.equal(await page.locator("main img, main script, main iframe").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(problems, []);
});
