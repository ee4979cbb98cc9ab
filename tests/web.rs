//! `tavern serve`: every endpoint over real HTTP against a real server process, with the
//! refusals that keep other pages, other hosts and other machines out.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::TestBoard;

/// A running `tavern serve`, killed when dropped.
pub(crate) struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response: status, headers (names lowercased) and body.
#[derive(Debug)]
pub(crate) struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
    #[track_caller]
    fn status(&self, want: u16) -> &Self {
        assert_eq!(self.status, want, "status; body: {}", self.body);
        self
    }
    /// The message of a refusal.
    fn message(&self) -> String {
        self.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

const HUMAN: &str = "alice";

/// A board whose humans are alice; the server runs as `actor`.
fn board_with_human() -> TestBoard {
    let b = TestBoard::new();
    let yaml = b
        .read("board.yaml")
        .replace("humans: []", "humans: [alice]");
    b.write("board.yaml", yaml);
    b
}

fn serve(b: &TestBoard, actor: &str) -> Server {
    serve_cmd(b.cmd(&["serve", "--port", "0", "--as", actor]))
}

/// Starts `cmd` (a `tavern serve --port 0` command) and reads the URL it prints.
pub(crate) fn serve_cmd(mut cmd: std::process::Command) -> Server {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tavern serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .strip_prefix("tavern serve: ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .trim()
        .to_string();
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, token) = rest.split_once("/?token=").unwrap();
    assert_eq!(token.len(), 32);
    assert!(token.bytes().all(|c| c.is_ascii_hexdigit()));
    Server {
        child,
        port: port.parse().unwrap(),
        token: token.to_string(),
    }
}

impl Server {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Sends one request (Connection: close) with exactly these headers besides Host.
    fn raw(
        &self,
        method: &str,
        path: &str,
        host: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Resp {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        parse(&String::from_utf8_lossy(&raw))
    }

    /// GET with the secret in the header.
    pub(crate) fn get(&self, path: &str) -> Resp {
        self.raw(
            "GET",
            path,
            &self.host(),
            &[("x-tavern-token", &self.token)],
            "",
        )
    }

    /// POST a JSON body as the page does: the secret in the header, from its own origin.
    fn post(&self, path: &str, body: Value) -> Resp {
        let origin = self.origin();
        self.raw(
            "POST",
            path,
            &self.host(),
            &[
                ("x-tavern-token", &self.token),
                ("origin", &origin),
                ("content-type", "application/json"),
            ],
            &body.to_string(),
        )
    }
}

fn parse(text: &str) -> Resp {
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// The entry of log.yaml about `doc` that `pick` selects, from the last one back.
fn last_entry(b: &TestBoard, doc: &str) -> Value {
    b.log()
        .into_iter()
        .rev()
        .find(|e| e["doc"] == doc)
        .unwrap_or_else(|| panic!("no log entry about {doc}"))
}

#[test]
fn serve_refuses_every_address_but_loopback() {
    let b = board_with_human();
    for addr in ["0.0.0.0", "::", "192.168.1.20", "127.0.0.2", "example.com"] {
        let out = b.run(&["serve", "--bind", addr, "--port", "0"]);
        out.code(2).stdout_is("");
        out.stderr_has(&format!(
            "error: tavern serve listens on 127.0.0.1 only, not '{addr}'"
        ));
    }
}

#[test]
fn the_url_secret_becomes_a_cookie_and_the_page_needs_it() {
    let b = board_with_human();
    let s = serve(&b, HUMAN);
    let host = s.host();
    // Without the secret: no page, no data.
    let r = s.raw("GET", "/", &host, &[], "");
    r.status(401);
    assert!(!r.body.contains(&s.token));
    s.raw(
        "GET",
        "/?token=0123456789abcdef0123456789abcdef",
        &host,
        &[],
        "",
    )
    .status(401);
    // With it: a cookie for this port, and a redirect to a URL without the secret.
    let r = s.raw("GET", &format!("/?token={}", s.token), &host, &[], "");
    r.status(303);
    assert_eq!(r.header("location"), Some("/"));
    assert_eq!(
        r.header("set-cookie"),
        Some(
            format!(
                "tavern-{}={}; Path=/; HttpOnly; SameSite=Strict",
                s.port, s.token
            )
            .as_str()
        )
    );
    let cookie = format!("tavern-{}={}", s.port, s.token);
    let page = s.raw("GET", "/", &host, &[("cookie", &cookie)], "");
    page.status(200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(page.body.contains(&format!(
        "<meta name=\"tavern-token\" content=\"{}\">",
        s.token
    )));
    assert_eq!(
        page.header("content-security-policy"),
        Some(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
        )
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    // No inline script or style in the page: the policy would block it anyway.
    assert!(
        !page.body.contains("<script>")
            && !page.body.contains("<style")
            && !page.body.contains(" style=")
    );
    // The cookie also opens the API (the event stream cannot send headers).
    s.raw("GET", "/api/state", &host, &[("cookie", &cookie)], "")
        .status(200);
    let other_port = format!("tavern-{}={}", s.port + 1, s.token);
    s.raw("GET", "/api/state", &host, &[("cookie", &other_port)], "")
        .status(401);
}

#[test]
fn assets_are_embedded_and_parse_no_html_but_the_servers_cleaned_markdown() {
    let b = board_with_human();
    let s = serve(&b, HUMAN);
    for (path, kind) in [
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/app.css", "text/css; charset=utf-8"),
        ("/favicon.svg", "image/svg+xml"),
    ] {
        let r = s.raw("GET", path, &s.host(), &[], "");
        r.status(200);
        assert_eq!(r.header("content-type"), Some(kind), "{path}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        if !path.ends_with(".js") {
            continue;
        }
        let code: String = r
            .body
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        // Untrusted text never goes through eval or another origin, and through an HTML
        // parser only as a body the server rendered and cleaned (body_html), in one place.
        for banned in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "http://",
            "https://",
        ] {
            assert!(!code.contains(banned), "{path} uses {banned}");
        }
        assert_eq!(code.matches("parseFromString").count(), 1, "{path}");
        for call in code.match_indices("markdown(").map(|(i, _)| &code[i..]) {
            let arg = &call["markdown(".len()..call.find(')').unwrap()];
            assert!(
                arg == "html" || arg.ends_with(".body_html"),
                "markdown({arg})"
            );
        }
    }
    // The renderer the page had before is gone.
    s.raw("GET", "/assets/markdown.js", &s.host(), &[], "")
        .status(404);
    s.raw("GET", "/nope", &s.host(), &[], "").status(404);
}

#[test]
fn every_api_call_needs_the_secret() {
    let b = board_with_human();
    let s = serve(&b, HUMAN);
    for path in [
        "/api/state",
        "/api/board",
        "/api/waiting",
        "/api/agents",
        "/api/holds",
        "/api/findings",
        "/api/search?q=x",
        "/api/log",
        "/api/doc/x",
        "/api/events",
    ] {
        let r = s.raw("GET", path, &s.host(), &[], "");
        r.status(401);
        assert_eq!(
            r.message(),
            "this needs the secret of this run: open the URL that `tavern serve` printed"
        );
        s.raw("GET", path, &s.host(), &[("x-tavern-token", "0000")], "")
            .status(401);
    }
    for path in ["/api/pause", "/api/resume", "/api/task/x/transition"] {
        s.raw(
            "POST",
            path,
            &s.host(),
            &[("content-type", "application/json")],
            "{}",
        )
        .status(401);
    }
    // The cookie alone (which a browser would attach to a cross-site form) cannot write.
    let cookie = format!("tavern-{}={}", s.port, s.token);
    let r = s.raw(
        "POST",
        "/api/pause",
        &s.host(),
        &[("cookie", &cookie), ("content-type", "application/json")],
        "{}",
    );
    r.status(403);
    assert_eq!(
        r.message(),
        "a change needs the secret in the x-tavern-token header"
    );
    assert!(!b.board().join("control/PAUSE").exists());
    // Writes are POST only.
    s.get("/api/pause").status(405);
    s.get("/api/task/x/transition").status(405);
    let r = s.raw(
        "PUT",
        "/api/pause",
        &s.host(),
        &[("x-tavern-token", &s.token)],
        "{}",
    );
    r.status(405);
}

#[test]
fn foreign_hosts_and_origins_are_refused() {
    let b = board_with_human();
    let s = serve(&b, HUMAN);
    let token = s.token.clone();
    let with_token = [("x-tavern-token", token.as_str())];
    // DNS rebinding: a hostile name pointed at 127.0.0.1 still says its own name.
    for host in [
        format!("evil.example:{}", s.port),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{}", s.port + 1),
        format!("0.0.0.0:{}", s.port),
    ] {
        let r = s.raw("GET", "/api/state", &host, &with_token, "");
        r.status(421);
        assert!(r.message().contains("Host header refused"), "{}", r.body);
        s.raw("GET", "/", &host, &[], "").status(421);
    }
    s.raw(
        "GET",
        "/api/state",
        &format!("localhost:{}", s.port),
        &with_token,
        "",
    )
    .status(200);
    // Another page in the browser.
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let r = s.raw(
            "POST",
            "/api/pause",
            &s.host(),
            &[
                ("x-tavern-token", &token),
                ("origin", origin),
                ("content-type", "application/json"),
            ],
            "{}",
        );
        r.status(403);
        assert_eq!(r.message(), "requests from other origins are refused");
        s.raw(
            "GET",
            "/api/board",
            &s.host(),
            &[("x-tavern-token", &token), ("origin", origin)],
            "",
        )
        .status(403);
    }
    assert!(!b.board().join("control/PAUSE").exists());
    assert!(b.log().iter().all(|e| e["op"] != "pause"));
}

#[test]
fn read_endpoints_render_library_results() {
    let b = board_with_human();
    let dep = b.task("Design it", &["--priority", "1", "--id", "task-a"]);
    let t = b.task(
        "Build it",
        &[
            "--priority",
            "2",
            "--depends-on",
            &dep,
            "--id",
            "task-b",
            "--tag",
            "core",
        ],
    );
    b.run(&["claim", &dep, "--as", "coder-1"]).ok();
    b.run(&[
        "ask",
        "Which db?",
        "--options",
        "pg,sqlite",
        "--id",
        "q-db",
        "--as",
        "coder-2",
    ])
    .ok();
    b.run(&[
        "ask",
        "--permission",
        "deploy",
        "--resource",
        "prod",
        "--reason",
        "ship",
        "--id",
        "q-perm",
        "--as",
        "coder-2",
        "--body",
        "will run deploy.sh",
    ])
    .ok();
    b.run(&[
        "post",
        "Slow parser",
        "--topic",
        "perf",
        "--severity",
        "high",
        "--id",
        "obs-1",
        "--as",
        "coder-2",
    ])
    .ok();
    b.run(&[
        "agent",
        "register",
        "--name",
        "coder-1",
        "--capabilities",
        "rust",
    ])
    .ok();
    b.write("tasks/broken.md", "no frontmatter here\n");
    let s = serve(&b, HUMAN);

    let state = s.get("/api/state");
    state.status(200);
    let v = state.json();
    assert_eq!(v["actor"], "alice");
    assert_eq!(v["human"], true);
    assert_eq!(v["gone"], false);
    assert_eq!(v["status"]["paused"], Value::Null);
    assert_eq!(v["status"]["humans"], json!(["alice"]));

    let board = s.get("/api/board").json();
    assert_eq!(board["tasks"], 2);
    let states: Vec<&str> = board["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "pending",
            "claimed",
            "working",
            "review",
            "blocked",
            "done",
            "failed",
            "cancelled"
        ]
    );
    let pending = &board["columns"][0];
    assert_eq!(pending["total"], 1);
    let card = &pending["cards"][0];
    assert_eq!(card["id"], t);
    assert_eq!(card["title"], "Build it");
    assert_eq!(card["priority"], 2);
    assert_eq!(card["tags"], json!(["core"]));
    assert_eq!(card["depends_on"], json!(["task-a"]));
    assert_eq!(
        card["blockers"],
        json!([{"id": "task-a", "kind": "task", "what": "claimed"}])
    );
    assert_eq!(board["columns"][1]["cards"][0]["claimed_by"], "coder-1");
    assert_eq!(
        board["skipped"],
        json!([{"path": "tasks/broken.md", "problem": "line 1: no frontmatter: the first line must be exactly `---`"}])
    );
    // The query language filters; a malformed query is the CLI's usage error.
    let only = s.get("/api/board?q=tag%3Acore").json();
    assert_eq!(only["columns"][0]["total"], 1);
    assert_eq!(only["columns"][1]["total"], 0);
    let bad = s.get("/api/board?q=priority%3Chigh");
    bad.status(400);
    let cli = b.run(&["list", "tasks", "priority<high"]);
    cli.code(2);
    assert_eq!(format!("error: {}\n", bad.message()), cli.stderr);
    // One column, one page of it.
    let page = s.get("/api/board?state=pending&offset=1&per=5").json();
    assert_eq!(page["columns"].as_array().unwrap().len(), 1);
    assert_eq!(page["columns"][0]["offset"], 1);
    assert_eq!(page["columns"][0]["cards"], json!([]));

    let waiting = s.get("/api/waiting").json();
    assert_eq!(waiting["questions"][0]["id"], "q-db");
    assert_eq!(waiting["questions"][0]["options"], json!(["pg", "sqlite"]));
    assert_eq!(waiting["questions"][0]["asked_by"], "coder-2");
    let p = &waiting["permissions"][0];
    assert_eq!(
        (
            p["id"].as_str(),
            p["capability"].as_str(),
            p["resource"].as_str(),
            p["reason"].as_str()
        ),
        (Some("q-perm"), Some("deploy"), Some("prod"), Some("ship"))
    );
    assert_eq!(p["body"], "\nwill run deploy.sh\n");
    assert_eq!(waiting["review"], json!([]));

    let agents = s.get("/api/agents").json();
    assert_eq!(agents[0]["id"], "coder-1");
    assert_eq!(agents[0]["status"], "active");
    assert_eq!(agents[0]["holds"], json!(["task-a"]));
    assert_eq!(agents[0]["capabilities"], json!(["rust"]));

    // Holds, read-only: as `tavern holds --json` lists them.
    b.run(&[
        "hold",
        "--as",
        "coder-1",
        "src/**",
        "--reason",
        "<b>refactor</b>",
    ])
    .ok();
    // Another agent refused: the conflict, with the hold in its way, under `refused`.
    b.run(&["hold", "--as", "coder-2", "src/a.rs"]).code(3);
    let mut holds = s.get("/api/holds").json();
    let refused = holds.as_object_mut().unwrap().remove("refused").unwrap();
    assert_eq!(holds, b.run(&["holds", "--json"]).ok().json());
    assert_eq!(holds["holds"][0]["reason"], "<b>refactor</b>");
    assert_eq!(refused.as_array().unwrap().len(), 1, "{refused}");
    assert_eq!(refused[0]["agent"], "coder-2");
    assert_eq!(refused[0]["holds"], json!([holds["holds"][0]["id"]]));
    assert!(
        refused[0]["note"]
            .as_str()
            .unwrap()
            .contains("coder-1 holds src/**"),
        "{refused}"
    );

    let findings = s.get("/api/findings").json();
    assert_eq!(findings["findings"][0]["id"], "obs-1");
    assert_eq!(findings["findings"][0]["severity"], "high");
    assert_eq!(findings["findings"][0]["status"], "open");
    assert_eq!(
        s.get("/api/findings?q=severity%3Dlow").json()["findings"],
        json!([])
    );

    // Search, through the same call as `tavern search --json`: the same answer.
    let found = s.get("/api/search?q=parser%20region%3Aobservations").json();
    let cli = b
        .run(&[
            "--json",
            "search",
            "parser",
            "region:observations",
            "--limit",
            "20",
        ])
        .ok()
        .json();
    assert_eq!(found, cli);
    assert_eq!(found["hits"][0]["id"], "obs-1", "{found}");
    // Filters alone are a usage error, as on the command line.
    let r = s.get("/api/search?q=status%3Dopen");
    r.status(400);
    assert!(
        r.message().contains("search needs words"),
        "{}",
        r.message()
    );

    let log = s.get("/api/log?limit=2").json();
    let seqs: Vec<u64> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let last = b.log().last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(seqs, [last, last - 1]);
    assert_eq!(log["last_seq"], last);
    assert_eq!(log["more"], true);
    let by_doc = s.get("/api/log?doc=task-a").json();
    let ops: Vec<&str> = by_doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["claim", "create"]);
    assert!(
        by_doc["entries"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+status: claimed")
    );
    let by_actor = s.get("/api/log?actor=coder-2&op=create").json();
    assert_eq!(by_actor["entries"].as_array().unwrap().len(), 3);
    let older = s.get(&format!("/api/log?before={}&limit=1", last)).json();
    assert_eq!(older["entries"][0]["seq"], last - 1);

    let doc = s.get("/api/doc/task-b").json();
    assert_eq!(doc["path"], "tasks/task-b.md");
    assert_eq!(doc["fields"]["title"], "Build it");
    assert_eq!(doc["transitions"], json!(["claim", "fail", "cancel"]));
    assert_eq!(s.get("/api/doc/task").status, 400, "ambiguous prefix");
    let missing = s.get("/api/doc/nope");
    missing.status(404);
    assert_eq!(
        format!("error: {}\n", missing.message()),
        b.run(&["show", "nope"]).stderr
    );
}

#[test]
fn actions_are_library_calls_logged_as_the_human_via_the_dashboard() {
    let b = board_with_human();
    let t = b.task("Ship it", &["--id", "task-s"]);
    b.run(&[
        "ask",
        "Which db?",
        "--options",
        "pg,sqlite",
        "--id",
        "q-db",
        "--blocks",
        &t,
    ])
    .ok();
    b.run(&[
        "ask",
        "--permission",
        "deploy",
        "--resource",
        "prod",
        "--reason",
        "ship",
        "--id",
        "q-perm",
    ])
    .ok();
    b.run(&[
        "post",
        "Slow",
        "--topic",
        "perf",
        "--severity",
        "low",
        "--id",
        "obs-1",
    ])
    .ok();
    let s = serve(&b, HUMAN);

    let r = s.post(
        &format!("/api/task/{t}/transition"),
        json!({"name": "claim", "note": "mine"}),
    );
    r.status(200);
    assert_eq!(r.json()["message"], "claim task-s: now claimed (rev 2)");
    assert!(b.read("tasks/task-s.md").contains("claimed_by: alice\n"));
    let e = last_entry(&b, "tasks/task-s.md");
    assert_eq!(
        (e["actor"].as_str(), e["op"].as_str(), e["via"].as_str()),
        (Some("alice"), Some("claim"), Some("dashboard"))
    );

    // A lost race: the page acted on rev 2, the task moved on.
    b.run(&["start", &t, "--as", "alice"]).ok();
    let r = s.post(
        &format!("/api/task/{t}/transition"),
        json!({"name": "submit", "if_rev": 2}),
    );
    r.status(409);
    let cli = b.run(&["submit", &t, "--if-rev", "2", "--as", "alice"]);
    cli.code(3);
    assert_eq!(format!("error: {}\n", r.message()), cli.stderr);
    assert_eq!(r.json()["error"]["code"], 3);
    // A refused transition.
    let r = s.post(
        &format!("/api/task/{t}/transition"),
        json!({"name": "approve"}),
    );
    r.status(409);
    assert!(r.message().contains("approve"), "{}", r.message());
    s.post(
        &format!("/api/task/{t}/transition"),
        json!({"name": "bogus"}),
    )
    .status(400);

    let r = s.post("/api/question/q-db/answer", json!({"choice": "pg"}));
    r.status(200);
    assert_eq!(r.json()["message"], "answered q-db");
    let q = b.read("questions/q-db.md");
    assert!(
        q.contains("status: answered\n")
            && q.contains("answer: pg\n")
            && q.contains("answered_by: alice\n"),
        "{q}"
    );
    let e = last_entry(&b, "questions/q-db.md");
    assert_eq!(
        (e["actor"].as_str(), e["via"].as_str()),
        (Some("alice"), Some("dashboard"))
    );
    let again = s.post("/api/question/q-db/answer", json!({"text": "sqlite"}));
    again.status(409);
    assert_eq!(
        again.message(),
        "questions/q-db.md: cannot answer question q-db: it is answered, not open"
    );

    // A permission: the typed confirmation must be the id; a wrong one is refused and logged.
    let r = s.post(
        "/api/question/q-perm/decide",
        json!({"approve": true, "confirm": "q-nope"}),
    );
    r.status(409);
    assert!(
        r.message().contains("the confirmation did not match"),
        "{}",
        r.message()
    );
    let alert = last_entry(&b, "questions/q-perm.md");
    assert_eq!(
        (alert["op"].as_str(), alert["via"].as_str()),
        (Some("alert"), Some("dashboard"))
    );
    let r = s.post(
        "/api/question/q-perm/decide",
        json!({"approve": true, "confirm": "q-perm"}),
    );
    r.status(200);
    assert_eq!(r.json()["message"], "approved q-perm");
    let q = b.read("questions/q-perm.md");
    assert!(
        q.contains("status: approved\n") && q.contains("decided_by: alice\n"),
        "{q}"
    );
    let e = last_entry(&b, "questions/q-perm.md");
    assert_eq!(
        (e["actor"].as_str(), e["to"].as_str(), e["via"].as_str()),
        (Some("alice"), Some("approved"), Some("dashboard"))
    );

    s.post("/api/observation/obs-1/ack", json!({})).status(200);
    assert!(
        b.read("observations/obs-1.md")
            .contains("status: acknowledged\n")
    );
    s.post(
        "/api/observation/obs-1/resolve",
        json!({"resolution": "fixed in 1.2"}),
    )
    .status(200);
    assert!(
        b.read("observations/obs-1.md")
            .contains("status: resolved\n")
    );
    s.post("/api/observation/obs-1/explode", json!({}))
        .status(400);

    let r = s.post("/api/pause", json!({"reason": "lunch"}));
    r.status(200);
    assert_eq!(b.read("control/PAUSE"), "lunch\n");
    assert_eq!(s.get("/api/state").json()["status"]["paused"], "lunch");
    let claim = b.run(&["claim", "--next", "--as", "coder-1"]);
    claim.code(5);
    s.post("/api/resume", json!({})).status(200);
    assert!(!b.board().join("control/PAUSE").exists());
    let ops: Vec<(String, String)> = b
        .log()
        .iter()
        .filter(|e| e["via"] == "dashboard")
        .map(|e| {
            (
                e["actor"].as_str().unwrap().to_string(),
                e["op"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(ops.iter().all(|(a, _)| a == "alice"));
    assert!(ops.contains(&("alice".into(), "pause".into())));
    assert!(ops.contains(&("alice".into(), "resume".into())));
    // Commands run outside the server are not marked.
    assert!(
        b.log()
            .iter()
            .filter(|e| e["actor"] != "alice")
            .all(|e| e.get("via").is_none())
    );
}

#[test]
fn a_server_run_by_someone_not_in_humans_is_read_only() {
    let b = board_with_human();
    let t = b.task("Ship it", &[]);
    let mut child = b
        .cmd(&["serve", "--port", "0", "--as", "coder-1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        lines.push(l);
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        lines[1],
        "note: coder-1 is not listed under humans: in board.yaml, so the page is read-only (add it there, or use --as NAME)\n"
    );
    let s = serve(&b, "coder-1");
    assert_eq!(s.get("/api/state").json()["human"], false);
    let r = s.post(
        &format!("/api/task/{t}/transition"),
        json!({"name": "claim"}),
    );
    r.status(409);
    assert!(r.message().contains(
        "coder-1 is not listed under humans: in board.yaml, so the dashboard is read-only"
    ));
    assert!(
        b.read(&format!("tasks/{t}.md"))
            .contains("status: pending\n")
    );
}

/// Reads server-sent events until one named `name` arrives; returns its data.
fn next_event(reader: &mut BufReader<TcpStream>, name: &str) -> String {
    let mut event = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).expect("read the event stream");
        assert!(n > 0, "the event stream ended");
        let line = line.trim_end();
        if let Some(e) = line.strip_prefix("event: ") {
            event = e.to_string();
        } else if let Some(d) = line.strip_prefix("data: ")
            && event == name
        {
            return d.to_string();
        }
    }
}

fn open_events(s: &Server) -> BufReader<TcpStream> {
    let mut sock = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    // A guard against hanging forever, not a measure of speed.
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        sock,
        "GET /api/events HTTP/1.1\r\nHost: {}\r\nx-tavern-token: {}\r\n\r\n",
        s.host(),
        s.token
    )
    .unwrap();
    let mut reader = BufReader::new(sock);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    reader
}

#[test]
fn events_follow_changes_on_disk_and_survive_disconnects_and_a_vanishing_board() {
    let b = board_with_human();
    let t = b.task("Ship it", &[]);
    let s = serve(&b, HUMAN);
    let mut first = open_events(&s);
    assert_eq!(next_event(&mut first, "back"), r#"{"kind":"back"}"#);
    // A client that goes away mid-stream.
    let dropped = open_events(&s);
    drop(dropped);
    // A change by hand.
    let path = format!("tasks/{t}.md");
    let text = b
        .read(&path)
        .replace("status: pending", "status: cancelled");
    b.write(&path, text);
    let data = next_event(&mut first, "change");
    let v: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(v["kind"], "changed");
    assert!(
        v["paths"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == &json!(path)),
        "{data}"
    );
    // A change by the CLI in another process: the task file and the log.
    let u = b.task("Another", &[]);
    let mut seen = Vec::new();
    while !(seen.contains(&format!("tasks/{u}.md")) && seen.contains(&"log.yaml".to_string())) {
        let v: Value = serde_json::from_str(&next_event(&mut first, "change")).unwrap();
        seen.extend(
            v["paths"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_string()),
        );
    }
    s.get("/api/state").status(200);
    // The board directory disappears: said on the stream and by every endpoint.
    let away = b.root().join("away");
    std::fs::rename(b.board(), &away).unwrap();
    assert_eq!(next_event(&mut first, "gone"), r#"{"kind":"gone"}"#);
    let state = s.get("/api/state").json();
    assert_eq!(state["gone"], true);
    let r = s.get("/api/board");
    r.status(404);
    assert!(
        r.message().contains("it was removed or moved away"),
        "{}",
        r.message()
    );
    std::fs::rename(&away, b.board()).unwrap();
    assert_eq!(next_event(&mut first, "back"), r#"{"kind":"back"}"#);
    assert_eq!(s.get("/api/board").json()["tasks"], 2);
    // Changes after the return are seen too (a new watcher).
    b.write(
        &path,
        b.read(&path)
            .replace("status: cancelled", "status: pending"),
    );
    let data = next_event(&mut first, "change");
    assert!(data.contains(&path), "{data}");
}

#[test]
fn sigterm_stops_the_server_with_exit_0() {
    let b = board_with_human();
    let mut s = serve(&b, HUMAN);
    let _stream = open_events(&s);
    let status = std::process::Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = s.child.wait().unwrap();
    assert_eq!(code.code(), Some(0));
}

#[test]
fn open_starts_the_desktop_opener_on_the_url_with_its_secret() {
    let b = board_with_human();
    let bin = b.root().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opened = b.root().join("opened");
    let script = bin.join("xdg-open");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nprintf '%s\\n' \"$1\" > {}\n", opened.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = b
        .cmd(&["serve", "--port", "0", "--open"])
        .env("PATH", path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("tavern serve: ")
        .unwrap()
        .to_string();
    // The opener runs on its own; wait for what it wrote (bounded, not timed).
    let mut seen = String::new();
    for _ in 0..600 {
        seen = std::fs::read_to_string(&opened).unwrap_or_default();
        if seen.ends_with('\n') {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(seen, format!("{url}\n"));
}

/// The dashboard's decision is a human's: the actor who runs the server, listed under
/// humans:, confirming by the id, whatever reference form the page sends. A forged
/// decision (a hand edit) is shown as forged in what waits on you and on the document's
/// page, and stays decidable; a server run by someone else decides nothing; a task's
/// approve or an answer given the request is refused and logged; an observation's action
/// is the wrong kind; none writes anything.
#[test]
fn the_dashboard_decides_as_its_human_and_shows_forged_decisions() {
    let b = board_with_human();
    let ask = |id: &str| {
        b.run(&[
            "ask",
            "--permission",
            "deploy",
            "--resource",
            "prod",
            "--reason",
            "ship",
            "--id",
            id,
            "--as",
            "coder-1",
        ])
        .ok();
    };
    ask("q-perm");
    let before = b.read("questions/q-perm.md");
    b.write(
        "questions/q-perm.md",
        before.replace("status: open\n", "status: approved\ndecided_by: alice\n"),
    );
    let forged = json!({"state": "forged", "says": "approved by alice", "why": "the log holds no approve or deny of it by a human"});

    // Someone not listed under humans: read-only, the forgery shown all the same.
    let s = serve(&b, "coder-1");
    let w = s.get("/api/waiting").json();
    assert_eq!(w["permissions"][0]["id"], "q-perm");
    assert_eq!(w["permissions"][0]["decision"], forged);
    assert_eq!(s.get("/api/doc/q-perm").json()["decision"], forged);
    let r = s.post(
        "/api/question/q-perm/decide",
        json!({"approve": true, "confirm": "q-perm"}),
    );
    r.status(409);
    assert!(r.message().contains("read-only"), "{}", r.message());
    drop(s);

    // The human: a task's approve given the request is no decision (the decide action
    // is): refused as a conflict and logged, as MCP's move is; an observation's action is
    // the wrong kind.
    let s = serve(&b, HUMAN);
    let alerts = |b: &TestBoard| b.log().iter().filter(|e| e["op"] == "alert").count();
    let alerts_before = alerts(&b);
    for r in ["questions%2Fq-perm", "questions%2Fq-perm.md"] {
        s.post(
            &format!("/api/task/{r}/transition"),
            json!({"name": "approve"}),
        )
        .status(409);
        s.post(
            &format!("/api/observation/{r}/reject"),
            json!({"note": "no"}),
        )
        .status(400);
    }
    assert_eq!(alerts(&b), alerts_before + 2);
    // An answer is no decision: refused as a conflict, whatever the form, and logged.
    let alerts_before = alerts(&b);
    for r in [
        "q-perm",
        "q-p",
        "questions%2Fq-perm",
        "questions%2Fq-perm.md",
    ] {
        let res = s.post(
            &format!("/api/question/{r}/answer"),
            json!({"text": "approved"}),
        );
        res.status(409);
        assert!(
            res.message().contains("alice may not answer it"),
            "{}",
            res.message()
        );
    }
    assert_eq!(alerts(&b), alerts_before + 4);
    assert_eq!(
        b.read("questions/q-perm.md"),
        before.replace("status: open\n", "status: approved\ndecided_by: alice\n")
    );
    let log_len = b.log().len();
    // Each reference form decides one: its id, a prefix, REGION/ID, the path in the
    // board, the file's absolute path.
    let board = b.board();
    let abs = |id: &str| {
        board
            .join(format!("questions/{id}.md"))
            .to_str()
            .unwrap()
            .replace('/', "%2F")
    };
    let forms: [(&str, String); 5] = [
        ("q-a0", "q-a0".into()),
        ("q-b1", "q-b".into()),
        ("q-c2", "questions%2Fq-c2".into()),
        ("q-d3", "questions%2Fq-d3.md".into()),
        ("q-e4", abs("q-e4")),
    ];
    for (i, (id, r)) in forms.iter().enumerate() {
        ask(id);
        let res = s.post(
            &format!("/api/question/{r}/decide"),
            json!({"approve": i % 2 == 0, "confirm": id}),
        );
        res.status(200);
        let d = s.get(&format!("/api/doc/{id}")).json()["decision"].clone();
        let state = if i % 2 == 0 { "approved" } else { "denied" };
        assert_eq!(
            (d["state"].as_str(), d["by"].as_str()),
            (Some(state), Some(HUMAN)),
            "{r}: {d}"
        );
        let e = last_entry(&b, &format!("questions/{id}.md"));
        assert_eq!(
            (e["actor"].as_str(), e["via"].as_str(), e["note"].as_str()),
            (
                Some(HUMAN),
                Some("dashboard"),
                Some(format!("permission {state}: deploy on prod").as_str())
            )
        );
    }
    assert!(b.log()[log_len..].iter().all(|e| e["op"] != "alert"));
    // The forged one is still waiting, and the human decides it.
    let w = s.get("/api/waiting").json();
    let ids: Vec<&str> = w["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["q-perm"]);
    b.run(&["check"])
        .code(6)
        .stderr_has("questions/q-perm.md: forged decision");
    s.post(
        "/api/question/q-perm/decide",
        json!({"approve": false, "confirm": "q-perm"}),
    )
    .status(200);
    assert_eq!(
        s.get("/api/doc/q-perm").json()["decision"]["state"],
        "denied"
    );
    assert_eq!(s.get("/api/waiting").json()["permissions"], json!([]));
    b.run(&["check"]).ok();
}

#[test]
fn bodies_come_rendered_cleaned_and_bounded() {
    let b = board_with_human();
    let hostile = "# Plan\n\n<img src=x onerror=alert(1)> and [js](javascript:alert(2)) and [ok](https://example.com/)\n";
    b.run(&["ask", "Which?", "--id", "q-small", "--body", hostile])
        .ok();
    let big = format!("{}\n\n{}", ">".repeat(20_000), "word ".repeat(200_000));
    b.write("big.md", &big);
    let file = b.root().join(".tavern/big.md");
    b.run(&[
        "ask",
        "Big?",
        "--id",
        "q-big",
        "--body-file",
        file.to_str().unwrap(),
    ])
    .ok();
    let s = serve(&b, HUMAN);
    let waiting = s.get("/api/waiting").json();
    let q = |id: &str| {
        waiting["questions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == id)
            .unwrap()
            .clone()
    };
    let small = q("q-small");
    let html = small["body_html"].as_str().unwrap();
    assert!(html.contains("<h3>Plan</h3>"), "{html}");
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );
    assert!(
        !html.contains("<img") && !html.contains("javascript"),
        "{html}"
    );
    assert!(html.contains("<a href=\"https://example.com/\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">ok</a>"), "{html}");
    assert_eq!(small["body"], format!("\n{hostile}"));
    // A big body: nesting flattened, the rendering and the raw text in the list cut.
    let big_q = q("q-big");
    let html = big_q["body_html"].as_str().unwrap();
    assert!(
        html.matches("<blockquote>").count() <= 16,
        "{} quotes",
        html.matches("<blockquote>").count()
    );
    assert!(html.contains("not rendered here"));
    assert!(html.len() < 256 * 1024, "{} bytes of HTML", html.len());
    assert!(big_q["body"].as_str().unwrap().len() <= 64 * 1024);
    // Its own page has the whole text, and the same bounded rendering.
    let doc = s.get("/api/doc/q-big").json();
    assert_eq!(doc["body"].as_str().unwrap().trim(), big.trim());
    assert_eq!(big_q["body_bytes"], doc["body"].as_str().unwrap().len());
    assert_eq!(doc["body_html"], big_q["body_html"]);
}

#[test]
fn a_dependency_done_and_archived_blocks_nothing_as_tavern_deps_says() {
    let b = board_with_human();
    let base = b.task("Base", &["--id", "task-base"]);
    let top = b.task("Top", &["--id", "task-top", "--depends-on", &base]);
    let gone = b.task("Gone", &["--id", "task-gone"]);
    let other = b.task(
        "Other",
        &["--id", "task-other", "--depends-on", "task-gone"],
    );
    for t in [&base, &gone] {
        b.run(&["claim", t, "--as", "coder"]).ok();
        b.run(&["start", t, "--as", "coder"]).ok();
    }
    b.run(&["done", &base, "--as", "coder"]).ok();
    b.run(&["fail", &gone, "--as", "coder"]).ok();
    b.run(&["archive"]).ok();
    assert!(b.board().join("archive/tasks/task-base.md").exists());
    let deps = b.run(&["--json", "deps", &top]).ok().json();
    assert_eq!(deps["waits_for"][0]["status"], "done");
    let s = serve(&b, HUMAN);
    let board = s.get("/api/board").json();
    let card = |id: &str| {
        board["columns"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["cards"].as_array().unwrap().iter())
            .find(|c| c["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(card(&top)["blockers"], json!([]));
    // An archived dependency that failed still blocks, and says where it is.
    assert_eq!(
        card(&other)["blockers"],
        json!([{"id": "task-gone", "kind": "task", "what": "failed, archived"}])
    );
}

/// The tasks in review come a page at a time (`per`, from `offset`, oldest update first, as
/// the whole list orders them), with the count of all of them; the questions are listed
/// whole, and the count beside "Waiting on you" is exact.
#[test]
fn the_tasks_in_review_are_paged_and_counted_whole() {
    let b = board_with_human();
    let mut submitted = Vec::new();
    for i in 0..7 {
        let id = b.task(&format!("Review me {i}"), &["--id", &format!("task-r{i}")]);
        for step in ["claim", "start", "submit"] {
            b.run(&[step, &id, "--as", "coder"]).ok();
        }
        submitted.push(id);
    }
    b.task("Still pending", &["--id", "task-p"]);
    b.run(&["ask", "Which one?", "--id", "q-1", "--as", "coder"])
        .ok();
    let s = serve(&b, HUMAN);
    let ids = |v: &Value| -> Vec<String> {
        v["review"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = s.get("/api/waiting").json();
    assert_eq!(ids(&all), submitted, "oldest update first");
    assert_eq!(
        (all["review_total"].clone(), all["review_offset"].clone()),
        (json!(7), json!(0))
    );
    assert_eq!(all["questions"].as_array().unwrap().len(), 1);
    let mut paged = Vec::new();
    for offset in [0, 3, 6] {
        let page = s.get(&format!("/api/waiting?per=3&offset={offset}")).json();
        assert_eq!(page["review_total"], 7);
        assert_eq!(page["review_offset"], offset);
        assert_eq!(
            page["questions"], all["questions"],
            "questions listed whole"
        );
        paged.extend(ids(&page));
    }
    assert_eq!(paged, submitted, "the pages are the list, in order");
    let past = s.get("/api/waiting?per=3&offset=100").json();
    assert_eq!(ids(&past), Vec::<String>::new());
    assert_eq!(
        (past["review_total"].clone(), past["review_offset"].clone()),
        (json!(7), json!(7))
    );
    assert_eq!(ids(&s.get("/api/waiting?per=0").json()), submitted[..1]);
    assert_eq!(s.get("/api/state").json()["waiting"], 8);
    // Approved at the CLI: the page and the count follow (once the server has heard).
    b.run(&["approve", &submitted[0], "--as", HUMAN]).ok();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let after = loop {
        let w = s.get("/api/waiting?per=3").json();
        if w["review_total"] == 6 {
            break w;
        }
        assert!(
            std::time::Instant::now() < end,
            "the approval never showed: {w}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(ids(&after), submitted[1..4]);
    assert_eq!(s.get("/api/state").json()["waiting"], 7);
}
