//! The HTTP surface: the page and its assets, the JSON read API (one library read model
//! each), the actions (one library operation each, POST only), and the event stream.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use tavern::api::{self, Board, Error, Kind};

use super::App;
use super::live::Update;
use super::markdown;
use super::security;

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const FAVICON: &str = include_str!("assets/favicon.svg");

type Shared = Arc<App>;

pub fn router(app: Shared) -> Router {
    Router::new()
        .route("/", get(index))
        .route(
            "/assets/app.js",
            get(|| asset("text/javascript; charset=utf-8", APP_JS)),
        )
        .route(
            "/assets/app.css",
            get(|| asset("text/css; charset=utf-8", APP_CSS)),
        )
        .route("/favicon.svg", get(|| asset("image/svg+xml", FAVICON)))
        .route("/api/state", get(state))
        .route("/api/board", get(board_view))
        .route("/api/waiting", get(waiting))
        .route("/api/agents", get(agents))
        .route("/api/holds", get(holds))
        .route("/api/findings", get(findings))
        .route("/api/search", get(search))
        .route("/api/log", get(log_page))
        .route("/api/doc/{id}", get(document))
        .route("/api/events", get(events))
        .route("/api/task/{id}/transition", post(transition))
        .route("/api/question/{id}/answer", post(answer))
        .route("/api/question/{id}/decide", post(decide))
        .route("/api/observation/{id}/{action}", post(observation))
        .route("/api/pause", post(pause))
        .route("/api/resume", post(resume))
        .fallback(|| async { refuse(StatusCode::NOT_FOUND, "not-found", "no such page") })
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// A refusal as JSON: `{"error": {"kind", "code", "message"}}`.
fn refuse(status: StatusCode, kind: &str, message: &str) -> Response {
    let code = match status {
        StatusCode::NOT_FOUND => 4,
        StatusCode::BAD_REQUEST => 2,
        _ => 3,
    };
    (
        status,
        axum::Json(json!({"error": {"kind": kind, "code": code, "message": message}})),
    )
        .into_response()
}

/// Checks every request (Host, Origin, the secret, POST for writes) and hardens every
/// response.
async fn guard(State(app): State<Shared>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let g = &app.guard;
    let path = req.uri().path().to_string();
    let mut resp = if !g.host_ok(headers) {
        refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "forbidden",
            "this server answers only to http://127.0.0.1 and http://localhost on its own port (Host header refused)",
        )
    } else if !g.origin_ok(headers) {
        refuse(
            StatusCode::FORBIDDEN,
            "forbidden",
            "requests from other origins are refused",
        )
    } else if path.starts_with("/api/") && !(g.header_ok(headers) || g.cookie_ok(headers)) {
        refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this needs the secret of this run: open the URL that `tavern serve` printed",
        )
    } else if req.method() == Method::POST && !g.header_ok(headers) {
        refuse(
            StatusCode::FORBIDDEN,
            "forbidden",
            "a change needs the secret in the x-tavern-token header",
        )
    } else {
        next.run(req).await
    };
    security::harden(resp.headers_mut());
    resp
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[derive(Deserialize)]
struct IndexQuery {
    token: Option<String>,
}

/// The page. Its first visit, with `?token=SECRET`, trades the secret for a cookie and
/// redirects to a URL without it (so it stays out of the history and the address bar).
async fn index(
    State(app): State<Shared>,
    Query(q): Query<IndexQuery>,
    headers: HeaderMap,
) -> Response {
    let g = &app.guard;
    if let Some(token) = q.token {
        if !g.token_ok(&token) {
            return html(
                StatusCode::UNAUTHORIZED,
                "The secret in this URL is not this run's: open the URL that `tavern serve` printed (a new run has a new secret).",
            );
        }
        let mut r = (StatusCode::SEE_OTHER, "").into_response();
        r.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/"));
        if let Ok(v) = HeaderValue::from_str(&g.set_cookie()) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        return r;
    }
    if !g.cookie_ok(&headers) {
        return html(
            StatusCode::UNAUTHORIZED,
            "This page needs the secret of this run: open the URL that `tavern serve` printed.",
        );
    }
    let mut r = INDEX.replace("{{TOKEN}}", g.secret()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

/// A page with one sentence (our own text: nothing from the board).
fn html(status: StatusCode, text: &'static str) -> Response {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>tavern</title></head><body><p>{text}</p></body></html>"
    );
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

/// An error from the library as JSON (`{"error": {"kind", "code", "message", "path"}}`),
/// worded for the page.
fn error_response(e: &Error) -> Response {
    let status = match e.kind() {
        Kind::Usage => StatusCode::BAD_REQUEST,
        Kind::Conflict => StatusCode::CONFLICT,
        Kind::NotFound => StatusCode::NOT_FOUND,
        Kind::Paused => StatusCode::LOCKED,
        Kind::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let message = api::errors::message(e, &super::words::Page);
    (status, axum::Json(api::errors::Report::new(e, &message))).into_response()
}

/// Runs library code (file I/O, fsync, completion checks that may run commands) on a
/// blocking thread, so that event streams and other requests go on meanwhile.
async fn blocking<F>(app: Shared, f: F) -> Response
where
    F: FnOnce(&App) -> Result<Value, Error> + Send + 'static,
{
    match tokio::task::spawn_blocking(move || f(&app)).await {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(e)) => error_response(&e),
        Err(_) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "error",
            "the request failed inside the server",
        ),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, Error> {
    serde_json::to_value(v).map_err(|e| Error::input(format!("cannot encode the answer: {e}")))
}

async fn state(State(app): State<Shared>) -> Response {
    blocking(app, |app| {
        let gone = !app.root.is_dir();
        let mut v = json!({
            // null: nobody is named, the page is read-only.
            "actor": (!app.actor.is_empty()).then_some(&app.actor),
            "board": app.root.display().to_string(),
            "gone": gone,
        });
        if !gone {
            let board = app.board()?;
            let status = api::board::status(&board)?;
            v["human"] = api::board::is_human(&board, &app.actor).into();
            v["transitions"] = status.transitions.clone().into();
            v["status"] = to_json(&status)?;
            // For the count beside "Waiting on you", on every refresh: from memory.
            v["waiting"] = app
                .live
                .cache()
                .with(&board, |c| c.waiting_count(&board))?
                .into();
        }
        Ok(v)
    })
    .await
}

/// Query terms from the filter box, as the command line takes them from several words.
fn terms(q: &str) -> Vec<String> {
    q.split_whitespace().map(str::to_string).collect()
}

#[derive(Deserialize)]
struct BoardQuery {
    #[serde(default)]
    q: String,
    per: Option<usize>,
    /// One column only (to page it).
    state: Option<String>,
    #[serde(default)]
    offset: usize,
}

async fn board_view(State(app): State<Shared>, Query(q): Query<BoardQuery>) -> Response {
    blocking(app, move |app| {
        let board = app.board()?;
        let mut paging = api::columns::Paging {
            per_column: q.per.unwrap_or(50).clamp(1, 500),
            ..api::columns::Paging::default()
        };
        if let Some(s) = q.state {
            paging.offsets.insert(s.clone(), q.offset);
            paging.only.push(s);
        }
        let view = app
            .live
            .cache()
            .with(&board, |c| c.columns(&board, &terms(&q.q), &paging))?;
        to_json(&view)
    })
    .await
}

#[derive(Deserialize)]
struct WaitingQuery {
    /// Tasks in review per page (the questions and permission requests are all listed).
    per: Option<usize>,
    #[serde(default)]
    offset: usize,
}

async fn waiting(State(app): State<Shared>, Query(q): Query<WaitingQuery>) -> Response {
    blocking(app, move |app| {
        let board = app.board()?;
        let page = api::waiting::ReviewPage {
            offset: q.offset,
            limit: q.per.unwrap_or(50).clamp(1, 500),
        };
        let waiting = app.live.cache().with(&board, |c| c.waiting(&board, page))?;
        let mut v = to_json(&waiting)?;
        if let Some(Value::Array(items)) = v.get_mut("permissions") {
            items.iter_mut().for_each(|item| rendered(item, false));
        }
        if let Some(Value::Array(items)) = v.get_mut("questions") {
            for item in items {
                let options: Vec<String> = item["options"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|o| o.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                let rest = beyond_the_card(
                    item["body"].as_str().unwrap_or(""),
                    item["title"].as_str().unwrap_or(""),
                    &options,
                );
                render_as(item, &rest, false);
            }
        }
        Ok(v)
    })
    .await
}

/// Adds `body_html` (the body rendered within the bounds of [`markdown`]) and `body_bytes`.
/// In a list, the raw body is cut where the rendering stops, so a page of many huge bodies
/// stays small; a document's own page keeps the whole text.
fn rendered(item: &mut Value, whole: bool) {
    let Some(body) = item.get("body").and_then(Value::as_str) else {
        return;
    };
    let body = body.to_string();
    render_as(item, &body, whole);
}

/// [`rendered`], with `text` (a part of the body) as what is rendered.
fn render_as(item: &mut Value, text: &str, whole: bool) {
    let r = markdown::render(text);
    if !whole && let Some(shown) = r.shown {
        item["body"] = Value::String(text.get(..shown).unwrap_or(text).to_string());
    }
    item["body_bytes"] = r.bytes.into();
    item["body_html"] = Value::String(r.html);
}

/// A question's body less what its card shows already: a `## Question` section that only
/// repeats the title and an `## Options` section that only lists the options (what `ask`
/// writes), and headings with nothing under them.
fn beyond_the_card(body: &str, title: &str, options: &[String]) -> String {
    fn keep<'a>(
        heading: Option<&'a str>,
        lines: &[&'a str],
        title: &str,
        options: &[String],
        out: &mut Vec<&'a str>,
    ) -> bool {
        let text = lines.join("\n");
        let text = text.trim();
        let repeated = match heading.map(str::trim) {
            _ if text.is_empty() => true,
            Some("## Question") => text == title.trim(),
            Some("## Options") => text
                .lines()
                .map(|l| l.trim().trim_start_matches(['-', '*']).trim())
                .filter(|l| !l.is_empty())
                .eq(options.iter().map(String::as_str)),
            _ => false,
        };
        if !repeated {
            out.extend(heading);
            out.extend_from_slice(lines);
        }
        repeated
    }
    let mut out = Vec::new();
    let mut heading = None;
    let mut lines = Vec::new();
    let mut left_out = false;
    for line in body.lines() {
        if line.starts_with("## ") {
            left_out |= keep(heading, &lines, title, options, &mut out) && heading.is_some();
            heading = Some(line);
            lines.clear();
        } else {
            lines.push(line);
        }
    }
    left_out |= keep(heading, &lines, title, options, &mut out) && heading.is_some();
    if left_out {
        out.join("\n")
    } else {
        body.to_string()
    }
}

async fn agents(State(app): State<Shared>) -> Response {
    blocking(app, |app| {
        to_json(&api::agents::list(&app.board()?)?.agents)
    })
    .await
}

/// Holds on resources, read-only: who holds what, until when, who waits on whom, and the
/// recent refusals (conflicts).
async fn holds(State(app): State<Shared>) -> Response {
    blocking(app, |app| to_json(&api::holds::overview(&app.board()?)?)).await
}

#[derive(Deserialize)]
struct FindingsQuery {
    #[serde(default)]
    q: String,
}

async fn findings(State(app): State<Shared>, Query(q): Query<FindingsQuery>) -> Response {
    blocking(app, move |app| {
        to_json(&api::observations::findings(&app.board()?, &terms(&q.q))?)
    })
    .await
}

/// `tavern search` through the same call: the query in one string, as MCP's tool takes it.
async fn search(State(app): State<Shared>, Query(q): Query<FindingsQuery>) -> Response {
    blocking(app, move |app| {
        let req = api::search::SearchRequest {
            terms: vec![q.q],
            limit: 20,
        };
        to_json(&api::search::search(&app.board()?, &req)?)
    })
    .await
}

#[derive(Deserialize)]
struct LogQuery {
    actor: Option<String>,
    doc: Option<String>,
    op: Option<String>,
    before: Option<u64>,
    limit: Option<usize>,
}

async fn log_page(State(app): State<Shared>, Query(q): Query<LogQuery>) -> Response {
    blocking(app, move |app| {
        let board = app.board()?;
        let nonempty =
            |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        let filter = api::history::LogFilter {
            actor: nonempty(q.actor),
            doc: nonempty(q.doc),
            op: nonempty(q.op),
            ..Default::default()
        };
        let limit = q.limit.unwrap_or(100).clamp(1, 1000);
        to_json(&api::history::page(&board, &filter, q.before, limit)?)
    })
    .await
}

/// One document with its body rendered, and what the viewer may do with it.
async fn document(State(app): State<Shared>, Path(id): Path<String>) -> Response {
    blocking(app, move |app| {
        let board = app.board()?;
        // Read once: the moves offered are those of the revision shown.
        let shown = api::docs::show(&board, &id)?;
        let mut v = to_json(&shown)?;
        rendered(&mut v, true);
        if let api::docs::Shown::Doc(doc) = shown {
            let moves = api::tasks::moves(&board, &app.actor, &doc);
            v["transitions"] = moves
                .iter()
                .map(|m| m.name.clone())
                .collect::<Vec<_>>()
                .into();
            v["moves"] = to_json(&moves)?;
            v["archived"] = doc.archived.into();
            if doc.region == api::Region::Tasks && !doc.archived {
                v["blockers"] = to_json(&api::columns::blockers(&board, &doc)?)?;
            }
        }
        Ok(v)
    })
    .await
}

/// The event stream: `change` (with the changed paths), `gone` and `back` (the board
/// directory), and a keep-alive comment. Driven by the server's one watcher.
async fn events(State(app): State<Shared>) -> Response {
    let rx = app.live.subscribe();
    let first = if app.live.gone() {
        Update::Gone
    } else {
        Update::Back
    };
    let stream = futures_util::stream::unfold((rx, Some(first)), |(mut rx, first)| async move {
        let update = match first {
            Some(u) => u,
            None => match rx.recv().await {
                Ok(u) => u,
                // A slow page missed updates: it re-reads everything.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Update::Changed {
                    paths: vec![String::new()],
                },
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            },
        };
        let name = match &update {
            Update::Changed { .. } => "change",
            Update::Gone => "gone",
            Update::Back => "back",
        };
        let data = serde_json::to_string(&update).unwrap_or_default();
        let event = Event::default().event(name).data(data);
        Some((Ok::<_, Infallible>(event), (rx, None)))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// Opens the board for a change by the human running the server, or says why not.
fn human_board(app: &App) -> Result<Board, Error> {
    let board = app.board()?;
    if !api::board::is_human(&board, &app.actor) {
        return Err(Error::conflict(
            api::board::root(&board).join("board.yaml"),
            format!(
                "{} is not listed under humans: in board.yaml, so the dashboard is read-only; add the name there (or start tavern serve --as NAME)",
                app.actor
            ),
        ));
    }
    api::actor(&board, &app.actor)?;
    Ok(board)
}

/// What an action did, for the page.
fn done(message: String, seq: Option<u64>, warnings: Vec<String>) -> Value {
    json!({"ok": true, "message": message, "seq": seq, "warnings": warnings})
}

#[derive(Deserialize)]
struct TransitionBody {
    name: String,
    note: Option<String>,
    if_rev: Option<u64>,
    #[serde(default)]
    force: bool,
}

async fn transition(
    State(app): State<Shared>,
    Path(id): Path<String>,
    axum::Json(b): axum::Json<TransitionBody>,
) -> Response {
    blocking(app, move |app| {
        let board = human_board(app)?;
        let opts = api::tasks::Options {
            force: b.force,
            if_rev: b.if_rev,
            note: b.note.filter(|n| !n.trim().is_empty()),
            ..api::tasks::Options::default()
        };
        let changed = api::tasks::transition(&board, &app.actor, &id, &b.name, &opts)?;
        let doc = changed.doc();
        app.live.cache().touch(&board, [doc.rel_path().as_str()]);
        let msg = if changed.changed() {
            format!(
                "{} {}: now {} (rev {})",
                b.name,
                doc.id(),
                doc.status().unwrap_or("?"),
                doc.rev()
            )
        } else {
            format!("{} is already {}", doc.id(), doc.status().unwrap_or("?"))
        };
        Ok(done(msg, changed.outcome.entry.map(|e| e.seq), Vec::new()))
    })
    .await
}

#[derive(Deserialize)]
struct AnswerBody {
    text: Option<String>,
    choice: Option<String>,
}

async fn answer(
    State(app): State<Shared>,
    Path(id): Path<String>,
    axum::Json(b): axum::Json<AnswerBody>,
) -> Response {
    blocking(app, move |app| {
        let board = human_board(app)?;
        let text = b.text.filter(|t| !t.trim().is_empty());
        let a = api::questions::answer(
            &board,
            &app.actor,
            &id,
            text.as_deref(),
            b.choice.as_deref(),
        )?;
        let touched: Vec<String> = std::iter::once(a.outcome.doc.rel_path())
            .chain(a.unblocked.iter().map(|t| format!("tasks/{t}.md")))
            .collect();
        app.live
            .cache()
            .touch(&board, touched.iter().map(String::as_str));
        let mut msg = format!("answered {}", a.outcome.doc.id());
        if !a.unblocked.is_empty() {
            msg.push_str(&format!("; unblocked {}", a.unblocked.join(", ")));
        }
        Ok(done(msg, a.outcome.entry.map(|e| e.seq), a.warnings))
    })
    .await
}

#[derive(Deserialize)]
struct DecideBody {
    approve: bool,
    /// What the human typed to confirm: the request's id, as at the CLI's prompt.
    confirm: String,
    if_rev: Option<u64>,
}

async fn decide(
    State(app): State<Shared>,
    Path(id): Path<String>,
    axum::Json(b): axum::Json<DecideBody>,
) -> Response {
    blocking(app, move |app| {
        let board = human_board(app)?;
        let typed = b.confirm.clone();
        let mut confirm = move |_prompt: &str| -> std::io::Result<String> { Ok(typed.clone()) };
        let changed = api::questions::decide(
            &board,
            &app.actor,
            &id,
            b.approve,
            b.if_rev,
            Some(&mut confirm),
        )?;
        app.live
            .cache()
            .touch(&board, [changed.doc().rel_path().as_str()]);
        let verb = if b.approve { "approved" } else { "denied" };
        Ok(done(
            format!("{verb} {}", changed.doc().id()),
            changed.outcome.entry.map(|e| e.seq),
            Vec::new(),
        ))
    })
    .await
}

#[derive(Deserialize)]
struct ObservationBody {
    resolution: Option<String>,
    note: Option<String>,
    if_rev: Option<u64>,
}

async fn observation(
    State(app): State<Shared>,
    Path((id, action)): Path<(String, String)>,
    axum::Json(b): axum::Json<ObservationBody>,
) -> Response {
    blocking(app, move |app| {
        use api::observations::Action;
        let board = human_board(app)?;
        let (act, verb) = match action.as_str() {
            "ack" => (Action::Ack, "acknowledged"),
            "resolve" => (
                Action::Resolve {
                    resolution: b.resolution.unwrap_or_default(),
                },
                "resolved",
            ),
            "reject" => (Action::Reject { note: b.note }, "rejected"),
            other => {
                return Err(Error::usage(format!(
                    "unknown action '{}' on an observation: ack, resolve or reject",
                    other.escape_debug()
                )));
            }
        };
        let changed = api::observations::act(&board, &app.actor, &id, &act, b.if_rev)?;
        Ok(done(
            format!("{verb} {}", changed.doc().id()),
            changed.outcome.entry.map(|e| e.seq),
            Vec::new(),
        ))
    })
    .await
}

#[derive(Deserialize)]
struct PauseBody {
    #[serde(default)]
    reason: String,
}

async fn pause(State(app): State<Shared>, axum::Json(b): axum::Json<PauseBody>) -> Response {
    blocking(app, move |app| {
        let board = human_board(app)?;
        let p = api::board::pause(&board, &app.actor, &b.reason)?;
        Ok(done(
            format!("paused: {}", p.reason.clone().unwrap_or_default()),
            p.entry.map(|e| e.seq),
            Vec::new(),
        ))
    })
    .await
}

async fn resume(State(app): State<Shared>) -> Response {
    blocking(app, move |app| {
        let board = human_board(app)?;
        let p = api::board::resume(&board, &app.actor)?;
        let msg = if p.changed() {
            "resumed"
        } else {
            "was not paused"
        };
        Ok(done(msg.to_string(), p.entry.map(|e| e.seq), Vec::new()))
    })
    .await
}
