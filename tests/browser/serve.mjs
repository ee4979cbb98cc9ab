// What the browser tests share: a board of their own made with the real `tavern` binary,
// `tavern serve` on it, and Debian's Chromium driven by playwright-core (which never
// downloads a browser). TAVERN_BIN picks the binary (default target/debug/tavern);
// CHROMIUM the browser.

import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const bin = process.env.TAVERN_BIN || path.join(repo, "target", "debug", "tavern");
export const shots = path.join(repo, "target", "web");
export const WAIT = 10_000;

/// A new board in a temp dir, with `humans` listed in board.yaml.
export function newBoard(humans) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tavern-web-"));
  const project = path.join(tmp, "project");
  fs.mkdirSync(project);
  execFileSync(bin, ["init", project], { encoding: "utf8" });
  const board = path.join(project, ".tavern");
  const yaml = path.join(board, "board.yaml");
  fs.writeFileSync(yaml, fs.readFileSync(yaml, "utf8").replace(/^humans: \[\]$/m, `humans: [${humans.join(", ")}]`));
  fs.mkdirSync(shots, { recursive: true });
  const tavern = (args, actor, input) =>
    execFileSync(bin, ["--board", board, ...args], {
      env: { ...process.env, TAVERN_AGENT: actor },
      encoding: "utf8",
      input,
      maxBuffer: 64 << 20,
    });
  return { tmp, board, tavern };
}

/// `tavern serve --as ACTOR` on the board; resolves to { server, url, origin }.
/// Ends a server and waits until it has exited: a server still writing its read index
/// while the test removes its board would make the removal fail.
export async function stop(proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  proc.kill("SIGTERM");
  await exited;
}

export async function serve(board, actor) {
  const server = spawn(bin, ["serve", "--port", "0", "--board", board, "--as", actor], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  server.stderr.on("data", (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (d) => {
      out += d;
      const m = /^tavern serve: (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+)$/m.exec(out);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`tavern serve exited ${code}: ${stderr}`)));
  });
  return { server, url, origin: new URL(url).origin };
}

/// A headless Chromium with one page; `problems` collects dialogs, page errors and any
/// request to another origin than `origin`.
export async function browser(origin, viewport = { width: 1500, height: 900 }) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "tavern-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
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
    viewport,
  });
  const page = context.pages()[0] || (await context.newPage());
  const problems = [];
  page.on("dialog", (d) => {
    problems.push("dialog: " + d.message());
    d.dismiss();
  });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("request", (r) => {
    if (!r.url().startsWith(origin)) problems.push("request to " + r.url());
  });
  const close = async () => {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, problems, close };
}

/// The whole log as tavern reads it (`tavern log --json`: one entry per line).
export function logEntries(tavern) {
  return tavern(["log", "--json"], "tester")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}
