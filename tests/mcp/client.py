"""Drives `tavern mcp` with the official MCP Python SDK's client, step by step.

Usage: client.py SCENARIO.json. The scenario names the server command and the steps; the
script prints one JSON document with a result per step, for the Rust test to check.
Nothing here knows tavern: it speaks MCP and reports what came back.
"""

import json
import os
import random
import subprocess
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError


def server_params(s):
    return StdioServerParameters(
        command=s["command"], args=s.get("args", []), env=s.get("env"), cwd=s.get("cwd")
    )


def tool_result(r):
    text = "".join(getattr(c, "text", "") for c in r.content)
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    return {"is_error": bool(r.is_error), "value": value, "bytes": len(text.encode())}


async def step(client, s, scenario):
    op = s["op"]
    if op == "tools":
        r = await client.list_tools()
        tools = [t.model_dump(by_alias=True, exclude_none=True) for t in r.tools]
        return {
            "names": [t["name"] for t in tools],
            "bytes": len(json.dumps({"tools": tools}, separators=(",", ":")).encode()),
            "tools": tools,
        }
    if op == "run":
        # Another program changes the board meanwhile (a human at the CLI).
        env = {k: v for k, v in os.environ.items() if k not in ("TAVERN_AGENT", "TAVERN_BOARD")}
        env["USER"] = "tester"
        p = subprocess.run(s["argv"], capture_output=True, text=True, cwd=s.get("cwd"), env=env)
        return {"code": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
    if op == "pid":
        return {"pid": os.getpid()}
    if op == "instructions":
        return {"text": client.instructions}
    if op == "call":
        try:
            r = await client.call_tool(s["tool"], s.get("args", {}))
        except MCPError as e:
            return {"protocol_error": str(e)}
        return tool_result(r)
    if op == "resources":
        r = await client.list_resources()
        return {"uris": [x.uri for x in r.resources], "next_cursor": r.next_cursor}
    if op == "templates":
        r = await client.list_resource_templates()
        return {"templates": [t.uri_template for t in r.resource_templates]}
    if op == "read":
        try:
            r = await client.read_resource(s["uri"])
        except MCPError as e:
            return {"protocol_error": str(e)}
        return {"text": "".join(getattr(c, "text", "") for c in r.contents)}
    if op == "listen_then_run":
        # Subscribe to a resource, change the board with another program, and report the
        # notifications that arrive before the first one about that resource.
        seen = []
        async with client.listen(
            resources_list_changed=True, resource_subscriptions=[s["uri"]]
        ) as sub:
            subprocess.run(s["run"], check=True, capture_output=True)
            with anyio.fail_after(s.get("wait", 30)):
                async for event in sub:
                    seen.append(type(event).__name__ + ":" + str(getattr(event, "uri", "")))
                    if getattr(event, "uri", None) == s["uri"]:
                        break
        return {"events": seen}
    raise SystemExit(f"unknown step {op}")


async def session(server, steps, scenario):
    results = []
    async with Client(server_params(server), read_timeout_seconds=60) as client:
        for s in steps:
            results.append(await step(client, s, scenario))
    return results


async def race(r):
    """Every server claims every task, each in its own order, all at once."""
    out = [None] * len(r["servers"])

    async def one(i, server):
        order = list(r["tasks"])
        random.Random(r.get("seed", 0) + i).shuffle(order)
        got = []
        async with Client(server_params(server), read_timeout_seconds=120) as client:
            for task in order:
                res = tool_result(await client.call_tool("claim", {"id": task}))
                if res["is_error"]:
                    got.append({"task": task, "code": res["value"]["error"]["code"]})
                else:
                    got.append({"task": task, "code": 0, "changed": res["value"]["changed"]})
        out[i] = got

    async with anyio.create_task_group() as tg:
        for i, server in enumerate(r["servers"]):
            tg.start_soon(one, i, server)
    return out


async def main():
    with open(sys.argv[1]) as f:
        scenario = json.load(f)
    if "race" in scenario:
        result = await race(scenario["race"])
    else:
        result = await session(scenario["server"], scenario["steps"], scenario)
    json.dump(result, sys.stdout)


anyio.run(main)
