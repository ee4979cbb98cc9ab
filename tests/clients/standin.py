#!/usr/bin/env python3
"""A scripted stand-in for a model's API, for driving the released agent clients end to end.

    standin.py SCRIPT RECORD

Serves on 127.0.0.1 (the port is printed on the first line of stdout) until its standard
input closes. It speaks the streaming wire formats the clients use:

  POST .../messages          Anthropic Messages, server-sent events (Claude Code)
  POST .../responses         OpenAI Responses, server-sent events (Codex)
  POST .../chat/completions  OpenAI Chat Completions, server-sent events (OpenCode)

SCRIPT is a JSON file {"turns": [TURN, ...]}; each TURN is the model's next answer:
{"tool": NAME, "input": {...}} calls a tool (Codex's MCP tools also take "namespace"),
{"text": "..."} answers in text. "tokens" sets the input tokens the answer reports (a
large number fills the context, so the client compacts). A request takes the first
remaining turn that fits it: a turn with "when" fits a request whose last message holds
that text (a compaction request, say); a turn without fits a request that offers tools.
A request no turn fits (a title, a summary nobody scripted) is answered "ok".
`{agent}` in a tool's input is replaced by the last agent name the request mentions
("agent `NAME`"), as a model would take the name it was given.

Every request is appended to RECORD as one JSON line {"path", "body", "turn"}, so tests can
assert what reached the model.
"""
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

with open(sys.argv[1]) as f:
    TURNS = json.load(f)["turns"]
RECORD = open(sys.argv[2], "a")
LOCK = threading.Lock()
COUNT = [0]


def last_message(body):
    """The text of the request's last message or input item."""
    items = body.get("messages") or body.get("input") or []
    return json.dumps(items[-1]) if isinstance(items, list) and items else ""


def next_turn(body):
    last = last_message(body)
    for i, turn in enumerate(TURNS):
        when = turn.get("when")
        if (when is not None and when in last) or (when is None and body.get("tools")):
            return TURNS.pop(i)
    return {"text": "ok"}


def with_agent(turn, body):
    names = re.findall(r"agent `([A-Za-z0-9._-]+)`", json.dumps(body))
    return json.loads(json.dumps(turn).replace("{agent}", names[-1] if names else "NONE"))


def sse(events, named=True):
    out = []
    for e in events:
        if e == "[DONE]":
            out.append("data: [DONE]\n\n")
        elif named:
            out.append(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n")
        else:
            out.append(f"data: {json.dumps(e)}\n\n")
    return "".join(out)


def anthropic(n, body, turn):
    usage = {"input_tokens": turn.get("tokens", 100), "output_tokens": 5}
    if "tool" in turn:
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": turn["tool"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(turn["input"])}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": turn["text"]}
        stop = "end_turn"
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant",
               "model": body.get("model", "standin"), "content": [], "stop_reason": None,
               "stop_sequence": None, "usage": usage}
    if not body.get("stream"):
        content = dict(block, **({"input": turn["input"]} if "tool" in turn else {"text": turn["text"]}))
        return "application/json", json.dumps(dict(message, content=[content], stop_reason=stop))
    return "text/event-stream", sse([
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ])


def responses(n, body, turn):
    if "tool" in turn:
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                "name": turn["tool"], "arguments": json.dumps(turn["input"])}
        if "namespace" in turn:
            item["namespace"] = turn["namespace"]
    else:
        item = {"type": "message", "id": f"m_{n}", "role": "assistant",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}]}
    tokens = turn.get("tokens", 100)
    usage = {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": tokens + 5}
    return "text/event-stream", sse([
        {"type": "response.created", "response": {"id": f"resp_{n}"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": f"resp_{n}", "usage": usage}},
    ])


def chat(n, body, turn):
    base = {"id": f"chat_{n}", "object": "chat.completion.chunk", "created": 0,
            "model": body.get("model", "standin")}
    if "tool" in turn:
        delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": f"call_{n}", "type": "function",
                 "function": {"name": turn["tool"], "arguments": json.dumps(turn["input"])}}]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": turn["text"]}
        finish = "stop"
    tokens = turn.get("tokens", 100)
    return "text/event-stream", sse([
        dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
        dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
             usage={"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5}),
        "[DONE]",
    ], named=False)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, kind, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with LOCK:
            RECORD.write(json.dumps({"path": self.path, "body": None, "turn": None}) + "\n")
            RECORD.flush()
        self.reply(404, "application/json", '{"error": "the stand-in serves no GET"}')

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        with LOCK:
            COUNT[0] += 1
            n = COUNT[0]
            turn = next_turn(body)
            RECORD.write(json.dumps({"path": self.path, "body": body, "turn": turn}) + "\n")
            RECORD.flush()
        turn = with_agent(turn, body)
        path = self.path.split("?")[0]
        if path.endswith("/messages"):
            self.reply(200, *anthropic(n, body, turn))
        elif path.endswith("/responses"):
            self.reply(200, *responses(n, body, turn))
        elif path.endswith("/chat/completions"):
            self.reply(200, *chat(n, body, turn))
        else:
            self.reply(404, "application/json", '{"error": "no such endpoint"}')


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()  # until the test closes it (or dies)
