// Takes the README's screenshot of the board: node shot.mjs URL OUT.png
import { chromium } from "playwright-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
const [url, out] = process.argv.slice(2);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "tavern-shot-"));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  viewport: { width: 1280, height: 560 },
});
const page = ctx.pages()[0] || (await ctx.newPage());
await page.goto(url);
await page.waitForSelector(".card");
await page.waitForSelector("#live.on");
await page.screenshot({ path: out });
await ctx.close();
fs.rmSync(profile, { recursive: true, force: true });
