// Loads the OpenCode plugin `tavern setup opencode` writes, the way OpenCode does: calls the
// exported plugin function with a plugin context ({ project, client, $, directory,
// worktree }) and then its hooks, in the shapes of OpenCode's plugin API. `$` stands in for
// Bun's shell: it runs the command for real (`tavern` from PATH) and supports .cwd()
// .quiet() .nothrow() .text(). `client.session.prompt` records what it is given.
//
// usage: node opencode.mjs PLUGIN.js BOARD_ROOT SCRIPT.json
// SCRIPT is a list of steps: {"event": EVENT} | {"after": INPUT} (the tool's output text as
//   the hook left it in "output"; with "output": false the tool has none) | {"compact": INPUT}
//   | {"before": {"input": INPUT, "args": ARGS}} (tool.execute.before; "refused" is the
//   error it threw, or null)
//   | {"system": INPUT} (the system prompt transform) | {"env": INPUT} (the shell's env)
//   | {"together": [STEP…]} (steps run at once, as OpenCode runs a session's first request
//   while the plugin still handles session.created; their results in "together")
//   | {"run": [argv…]} (a command, "{agent}" standing for opencode-PID) | {"unbeat": true} (remove the heartbeat file of agent opencode-PID, PID being this
//   process, OpenCode's stand-in); "beat": true in a step reports whether that file exists
//   after it.
// Prints {"pid", "exports", "steps": [{"ran": [argv…], "prompts": […], "context": […], "beat"}]}.

import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pluginPath, root, scriptPath] = process.argv.slice(2);
const script = JSON.parse(readFileSync(scriptPath, "utf8"));

let ran = [];
let prompts = [];

// Bun's shell, as far as the plugin uses it: the literal text splits at whitespace; an
// interpolated value is one argument however it looks, an array one per element. (An
// interpolation glued to literal text is not supported: the test would see it split.)
function argv(strings, values) {
  const out = [];
  strings.forEach((literal, i) => {
    out.push(...literal.split(/\s+/).filter((w) => w !== ""));
    if (i < values.length) {
      const v = values[i];
      out.push(...(Array.isArray(v) ? v : [v]).map(String));
    }
  });
  return out;
}

function $(strings, ...values) {
  const cmd = { argv: argv(strings, values), dir: process.cwd(), throws: true };
  cmd.cwd = (d) => ((cmd.dir = d), cmd);
  cmd.quiet = () => cmd;
  cmd.nothrow = () => ((cmd.throws = false), cmd);
  cmd.text = async () => {
    ran.push(cmd.argv);
    const r = spawnSync(cmd.argv[0], cmd.argv.slice(1), { cwd: cmd.dir, encoding: "utf8" });
    if (r.error) throw r.error;
    if (cmd.throws && r.status !== 0) throw new Error(`exit ${r.status}`);
    return r.stdout;
  };
  return cmd;
}

const client = {
  session: {
    prompt: async (args) => {
      prompts.push(args);
      return { data: {} };
    },
  },
};

// OpenCode imports the file as an ES module.
const dir = mkdtempSync(join(tmpdir(), "plugin-"));
const file = join(dir, "tavern.mjs");
copyFileSync(pluginPath, file);
const mod = await import(pathToFileURL(file).href);
rmSync(dir, { recursive: true });
const exports = Object.keys(mod);
const hooks = await mod[exports[0]]({
  project: { id: "p", worktree: root },
  client,
  $,
  directory: root,
  worktree: root,
});

const beat = join(root, ".tavern", ".state", "heartbeats", `opencode-${process.pid}`);
// One step's own results (what it ran and prompted is gathered per top-level step).
async function perform(step) {
  const result = {};
  if (step.together) result.together = await Promise.all(step.together.map(perform));
  else if (step.event) await hooks.event({ event: step.event });
  else if (step.after) {
    // "output": false gives the hook an output without a text (as a tool with none).
    const output = step.output === false ? { title: "", metadata: {} } : { title: "", output: "", metadata: {} };
    await hooks["tool.execute.after"](step.after, output);
    result.output = output.output ?? null;
  }
  else if (step.before) {
    // OpenCode refuses the tool call when the hook throws; the message is what the model reads.
    try {
      await hooks["tool.execute.before"](step.before.input, { args: step.before.args });
      result.refused = null;
    } catch (e) {
      result.refused = String(e.message);
    }
  }
  else if (step.compact) {
    const output = { context: [], prompt: undefined };
    await hooks["experimental.session.compacting"](step.compact, output);
    result.context = output.context;
  } else if (step.system) {
    const output = { system: [] };
    await hooks["experimental.chat.system.transform"](step.system, output);
    result.system = output.system;
  } else if (step.env) {
    const output = { env: {} };
    await hooks["shell.env"](step.env, output);
    result.env = output.env;
  } else if (step.run) {
    const [cmd, ...args] = step.run.map((a) => a.replace("{agent}", `opencode-${process.pid}`));
    const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8" });
    result.status = r.status;
  } else if (step.unbeat) {
    rmSync(beat, { force: true });
  }
  return result;
}

const steps = [];
for (const step of script) {
  ran = [];
  prompts = [];
  const result = await perform(step);
  result.ran = ran;
  result.prompts = prompts;
  if (step.beat) result.beat = existsSync(beat);
  steps.push(result);
}
process.stdout.write(JSON.stringify({ pid: process.pid, exports, hooks: Object.keys(hooks), steps }) + "\n");
