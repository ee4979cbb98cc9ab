//! `tavern mcp` in the board benchmark: a tool call's round trip over a session that is
//! already open, beside the same command run as a process (what an agent with a shell
//! pays per call), and the size of `tools/list` per profile (what a client puts in the
//! model's context before the first call).
//!
//! The client is a few lines of newline-delimited JSON-RPC over the server's stdio: the
//! `initialize` handshake, then `tools/call` requests, each timed from writing the request
//! to reading its response.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Bench, Built, median};

pub struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    pub fn open(bin: &Path, board: &Path, args: &[&str]) -> Session {
        let mut child = Command::new(bin)
            .arg("mcp")
            .args(args)
            .env("TAVERN_BOARD", board)
            .env("TAVERN_AGENT", "bench-mcp")
            .env("TAVERN_KEEPER", crate::KEEPER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn tavern mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "tavern-bench", "version": "0"}}),
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its result, skipping notifications.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "tavern mcp closed its output during {method}");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method} failed: {v}");
                return v["result"].clone();
            }
        }
    }

    /// One tool call, timed; panics on a tool error.
    pub fn call(&mut self, tool: &str, args: Value) -> Duration {
        let start = Instant::now();
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let took = start.elapsed();
        assert_ne!(r["isError"], json!(true), "{tool} {r}");
        took
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A row: the MCP round trip beside the same command as a process.
pub struct Row {
    pub op: &'static str,
    pub size: usize,
    pub mcp: Duration,
    pub cli: Duration,
}

/// Times show, list and claim over one open session and as processes, interleaved.
pub fn time(b: &Bench, built: &Built, n: usize, runs: usize, first: usize) -> Vec<Row> {
    // The command rows claimed some by id and some with `claim --next` (whichever ranked
    // best): take only those still pending.
    let claimable: Vec<&String> = built.claimable[first.min(built.claimable.len())..]
        .iter()
        .filter(|id| {
            std::fs::read_to_string(b.board.join(format!("tasks/{id}.md")))
                .is_ok_and(|t| t.contains("\nstatus: pending\n"))
        })
        .collect();
    assert!(
        claimable.len() > 2 * (runs + 1),
        "board of {n} has too few claimable tasks"
    );
    let mut s = Session::open(&b.bin, &b.board, &[]);
    let query = "region:tasks status=pending priority<=1";
    let mut samples: [Vec<Duration>; 6] = Default::default();
    for i in 0..=runs {
        let doc = format!("task-{:06}", (i * 7919 + 13) % n);
        let (mine, theirs) = (claimable[2 * i], claimable[2 * i + 1]);
        let round = [
            s.call("show", json!({"id": doc})),
            b.time(&["show", &doc]),
            s.call("list", json!({"query": query})),
            b.time(&["list", "tasks", "status=pending", "priority<=1"]),
            s.call("claim", json!({"id": mine})),
            b.time(&["claim", theirs]),
        ];
        if i > 0 {
            for (v, d) in samples.iter_mut().zip(round) {
                v.push(d);
            }
        }
    }
    let [show, cli_show, list, cli_list, claim, cli_claim] = samples.map(median);
    vec![
        Row {
            op: "show ID",
            size: n,
            mcp: show,
            cli: cli_show,
        },
        Row {
            op: "list status=pending priority<=1",
            size: n,
            mcp: list,
            cli: cli_list,
        },
        Row {
            op: "claim ID",
            size: n,
            mcp: claim,
            cli: cli_claim,
        },
    ]
}

/// The bytes of the `tools/list` result each profile sends.
pub fn tools_list_sizes(b: &Bench) -> Vec<(&'static str, usize, usize)> {
    ["core", "full"]
        .into_iter()
        .map(|profile| {
            let mut s = Session::open(&b.bin, &b.board, &["--profile", profile]);
            let r = s.request("tools/list", json!({}));
            let tools = r["tools"].as_array().map_or(0, Vec::len);
            (profile, tools, r.to_string().len())
        })
        .collect()
}

pub fn render(rows: &[Row], sizes: &[(&str, usize, usize)], out: &mut String) {
    if rows.is_empty() && sizes.is_empty() {
        return;
    }
    out.push_str("\n## tavern mcp\n\nA tool call over an open session (stdio, JSON-RPC), beside the same command run as a process; medians.\n\n");
    out.push_str("| operation | tasks | MCP round trip ms | CLI process ms | CLI / MCP |\n|---|---:|---:|---:|---:|\n");
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:.1}x |\n",
            r.op,
            r.size,
            super::ms(r.mcp),
            super::ms(r.cli),
            r.cli.as_secs_f64() / r.mcp.as_secs_f64()
        ));
    }
    if !sizes.is_empty() {
        out.push_str("\n| profile | tools | tools/list bytes | target |\n|---|---:|---:|---:|\n");
        for (profile, tools, bytes) in sizes {
            out.push_str(&format!(
                "| {profile} | {tools} | {bytes} | {} |\n",
                if *profile == "core" { "≤ 12288" } else { "" }
            ));
        }
    }
}
