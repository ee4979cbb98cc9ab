// Holds on the dashboard (read-only), as an overseer reads them: who holds what, until
// when, why (another agent's text, shown as text and never run), what stands in whose way
// (an agent refused it, an agent waiting in line for it with `tavern hold --wait`), and the
// line itself. The holds are made by real `tavern` processes; the waiter is one still
// running, as it is while it waits.
//
//   cargo build && (cd tests/browser && npm ci && npm test)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { newBoard, serve, stop, browser, shots, bin, WAIT } from "./serve.mjs";

const HOSTILE_REASON = `<img src=x onerror="window.__pwned='reason'"><script>window.__pwned='script'</script>`;

let b, srv, br, waiter;

before(async () => {
  b = newBoard(["alice"]);
  // Run in the project: paths are held relative to where they are typed.
  const project = path.dirname(b.board);
  const tavern = (args, actor) =>
    execFileSync(bin, ["--board", b.board, ...args], {
      cwd: project,
      env: { ...process.env, TAVERN_AGENT: actor },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  tavern(["hold", "src/**", "--reason", HOSTILE_REASON, "--for", "2h"], "coder-1");
  tavern(["hold", "--resource", "db:test", "--shared", "--reason", "fixtures"], "coder-4");
  // coder-2 is refused src/a.rs (exit 3).
  assert.throws(() => tavern(["hold", "src/a.rs"], "coder-2"), (e) => e.status === 3);
  // coder-3 waits in line for it: a process that runs until it is granted or ends.
  waiter = spawn(bin, ["--board", b.board, "hold", "src/a.rs", "--wait", "30m"], {
    cwd: project,
    env: { ...process.env, TAVERN_AGENT: "coder-3" },
    stdio: "ignore",
  });
  srv = await serve(b.board, "alice");
  br = await browser(srv.origin);
});

after(async () => {
  if (waiter) await stop(waiter);
  if (br) await br.close();
  if (srv) await stop(srv.server);
  if (b) fs.rmSync(b.tmp, { recursive: true, force: true });
});

test("the holds, their conflicts and who waits on whom, as text", async () => {
  const { page, problems } = br;
  await page.goto(srv.url);
  await page.goto(srv.origin + "/#/agents");
  // The waiter takes its ticket when it starts: the page shows it once it has (the page
  // is reloaded until then, within WAIT).
  const deadline = Date.now() + WAIT;
  while ((await page.locator(".waiting-table tbody tr").count()) === 0) {
    assert.ok(Date.now() < deadline, "the waiter never showed in the line");
    await page.waitForTimeout(200);
    await page.reload();
    await page.waitForSelector(".holds", { timeout: WAIT });
  }
  const row = page.locator('.holds-table tr[data-id="h-1"]');
  const cells = await row.locator("td").allInnerTexts();
  assert.deepEqual(cells.slice(1, 4), ["src/**", "coder-1", "exclusive"]);
  // Another agent's reason: exactly its text, no element made of it.
  assert.equal(await row.locator("td.reason").innerText(), HOSTILE_REASON);
  assert.equal(await row.locator("td.reason *").count(), 0);
  // Its conflicts: the waiter, and the refusal.
  const conflicts = await row.locator("td.conflicts").innerText();
  assert.match(conflicts, /coder-3 waits for it/);
  assert.match(conflicts, /coder-2 refused /);
  // The shared hold nobody contests.
  const shared = page.locator('.holds-table tr[data-id="h-2"]');
  assert.deepEqual((await shared.locator("td").allInnerTexts()).slice(1, 4), ["resource db:test", "coder-4", "shared"]);
  assert.equal(await shared.locator("td.conflicts").innerText(), "");
  // The line: coder-3, for src/a.rs, waiting on coder-1.
  const line = await page.locator(".waiting-table tbody tr").first().locator("td").allInnerTexts();
  assert.equal(line[1], "coder-3");
  assert.equal(line[2], "src/a.rs");
  assert.equal(line[3], "exclusive");
  assert.equal(line[6], "coder-1 (src/**)");
  assert.deepEqual(await page.locator("ul.waits li").allInnerTexts(), ["coder-3 waits on coder-1 (src/**)"]);
  // The refusal in the log's words, the reason quoted inside as text.
  const refusals = await page.locator("ul.refusals li").allInnerTexts();
  assert.equal(refusals.length, 1);
  assert.match(refusals[0], /coder-2: refused src\/a\.rs: src\/a\.rs: coder-1 holds src\/\*\* \(exclusive, h-1 /);
  assert.equal(await page.locator("ul.refusals li img, .holds img, .holds script").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  // Read-only: nothing to press about holds.
  assert.equal(await page.locator(".holds button, .holds input, .holds form").count(), 0);
  await page.screenshot({ path: path.join(shots, "holds.png"), fullPage: true });
  assert.deepEqual(problems, []);
});
