//! The line protocol between the client and the MCP server (rmcp), held to JSON-RPC 2.0 in
//! both directions.
//!
//! In: every line is checked before rmcp sees it. rmcp drops what it cannot parse, or
//! answers without the request's id, so a client that sent `"jsonrpc":"1.0"`, a numeric
//! method, no method or `"params":"x"` would wait for its timeout. Here each invalid
//! request gets the specification's error response with its id (null when the id cannot
//! be read), a line that is not JSON gets a parse error with a null id, and notifications
//! never get an answer (as the specification says), unless they are not even requests.
//!
//! Out: every line goes through one writer, whole, and no error is longer than
//! [`ERROR_CHARS`] characters of message, and no response longer than
//! [`MAX_RESPONSE_BYTES`]: whatever path an echo of the input took, it is cut here.

use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedSender;

/// The longest line read from the client; longer ones are refused and skipped.
pub const MAX_LINE: usize = 16 << 20;
/// Characters of an error's message, at most.
pub const ERROR_CHARS: usize = 1_000;
/// Bytes of one response line, at most (a tool result is bounded well below this).
pub const MAX_RESPONSE_BYTES: usize = 96 * 1024;

/// The requests of MCP itself (2025-06-18) that a client sends a server.
const PROTOCOL_METHODS: [&str; 13] = [
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// A valid message: to rmcp.
    Pass,
    /// Invalid: this line (a JSON-RPC error response, or an array of them) to the client.
    Reply(String),
    /// Nothing to do (a blank line, or a notification nobody answers).
    Ignore,
}

/// `text` of at most `max` characters, saying how long it was when cut.
pub fn shorten(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}… [cut: {total} characters in all]")
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": shorten(message, ERROR_CHARS)}})
}

/// The id of a message, when it has one that JSON-RPC allows (a string or a number).
fn valid_id(v: &Value) -> Option<&Value> {
    v.get("id").filter(|id| id.is_string() || id.is_number())
}

/// Checks one message object. Err: the problem, worded for the client.
fn check(obj: &serde_json::Map<String, Value>) -> Result<(), String> {
    match obj.get("id") {
        None | Some(Value::String(_) | Value::Number(_)) => {}
        Some(other) => {
            return Err(format!(
                "Invalid Request: id must be a string or a number, not {}",
                type_name(other)
            ));
        }
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("Invalid Request: jsonrpc must be \"2.0\"".into());
    }
    match obj.get("method") {
        Some(Value::String(_)) => match obj.get("params") {
            None | Some(Value::Object(_) | Value::Array(_)) => Ok(()),
            Some(other) => Err(format!(
                "Invalid Request: params must be an object, not {}",
                type_name(other)
            )),
        },
        Some(other) => Err(format!(
            "Invalid Request: method must be a string, not {}",
            type_name(other)
        )),
        // A response to a request of the server's: an id and exactly one of result, error.
        None if obj.contains_key("id")
            && (obj.contains_key("result") != obj.contains_key("error")) =>
        {
            Ok(())
        }
        None => Err("Invalid Request: no method".into()),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What one line from the client calls for.
pub fn screen(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    let v: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Reply(
                error(&Value::Null, PARSE_ERROR, &format!("Parse error: {e}")).to_string(),
            );
        }
    };
    let obj = match &v {
        Value::Object(o) => o,
        // MCP has no batches: each request with an id is told so under its id.
        Value::Array(items) if !items.is_empty() => {
            let replies: Vec<Value> = items
                .iter()
                .filter_map(|item| match item {
                    Value::Object(o) if !o.contains_key("id") => None,
                    _ => Some(error(
                        valid_id(item).unwrap_or(&Value::Null),
                        INVALID_REQUEST,
                        "Invalid Request: batches are not supported; send one message per line",
                    )),
                })
                .collect();
            return if replies.is_empty() {
                Verdict::Ignore
            } else {
                Verdict::Reply(Value::Array(replies).to_string())
            };
        }
        other => {
            return Verdict::Reply(
                error(
                    &Value::Null,
                    INVALID_REQUEST,
                    &format!(
                        "Invalid Request: a message is an object, not {}",
                        type_name(other)
                    ),
                )
                .to_string(),
            );
        }
    };
    let id = valid_id(&v);
    if let Err(problem) = check(obj) {
        return Verdict::Reply(
            error(id.unwrap_or(&Value::Null), INVALID_REQUEST, &problem).to_string(),
        );
    }
    // Well formed: rmcp must be able to read it too, or it would answer without the id;
    // and a request of the protocol's own whose params it cannot read (it takes it for a
    // method of its own, and says "method not found") has invalid params.
    use rmcp::model::{ClientRequest, JsonRpcMessage};
    match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(v.clone()) {
        Ok(JsonRpcMessage::Request(r)) => match &r.request {
            ClientRequest::CustomRequest(c) if PROTOCOL_METHODS.contains(&c.method.as_str()) => {
                let id = id.unwrap_or(&Value::Null);
                Verdict::Reply(
                    error(
                        id,
                        INVALID_PARAMS,
                        &format!("Invalid params: {} needs other params", c.method),
                    )
                    .to_string(),
                )
            }
            _ => Verdict::Pass,
        },
        Ok(_) => Verdict::Pass,
        Err(e) => match id {
            Some(id) if obj.contains_key("method") => Verdict::Reply(
                error(id, INVALID_PARAMS, &format!("Invalid params: {e}")).to_string(),
            ),
            // A notification or a response it cannot read: no one waits for an answer.
            _ => Verdict::Ignore,
        },
    }
}

/// A line to the client, within the bounds: an error's message cut and its data left out
/// when long, a response over [`MAX_RESPONSE_BYTES`] replaced by an error that says so.
pub fn bound(line: Vec<u8>) -> Vec<u8> {
    if line.len() <= 2 * ERROR_CHARS {
        return line;
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&line) else {
        return line;
    };
    let Some(obj) = v.as_object_mut() else {
        return line;
    };
    if let Some(Value::Object(err)) = obj.get_mut("error") {
        let message = err.get("message").and_then(Value::as_str).unwrap_or("");
        let short = shorten(message, ERROR_CHARS);
        err.insert("message".into(), Value::String(short));
        if err
            .get("data")
            .is_some_and(|d| d.to_string().len() > ERROR_CHARS)
        {
            err.remove("data");
        }
        let mut out = v.to_string().into_bytes();
        out.push(b'\n');
        return out;
    }
    if line.len() > MAX_RESPONSE_BYTES && obj.contains_key("result") {
        let id = obj.get("id").cloned().unwrap_or(Value::Null);
        let message = format!(
            "the result is {} bytes, over this server's bound of {MAX_RESPONSE_BYTES}: narrow the request",
            line.len()
        );
        let mut out = error(&id, INTERNAL_ERROR, &message)
            .to_string()
            .into_bytes();
        out.push(b'\n');
        return out;
    }
    line
}

/// Reads the client's lines from `input`: valid ones go to `to_rmcp`, answers to invalid
/// ones to `out`. Returns at the end of input (which ends rmcp's input too).
pub async fn read_client<R, W>(input: R, mut to_rmcp: W, out: UnboundedSender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = tokio::io::BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut over = false;
        // One line, never holding more than MAX_LINE of it.
        loop {
            let buf = match input.fill_buf().await {
                Ok(b) => b,
                Err(_) => return,
            };
            if buf.is_empty() {
                if line.is_empty() && !over {
                    return;
                }
                break;
            }
            let (take, end) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if !over && line.len() + take <= MAX_LINE {
                line.extend_from_slice(&buf[..take]);
            } else {
                over = true;
                line.clear();
            }
            input.consume(take);
            if end {
                break;
            }
        }
        let verdict = if over {
            Verdict::Reply(
                error(
                    &Value::Null,
                    INVALID_REQUEST,
                    &format!("Invalid Request: a message longer than {MAX_LINE} bytes"),
                )
                .to_string(),
            )
        } else {
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            screen(text.strip_suffix(b"\r").unwrap_or(text))
        };
        match verdict {
            Verdict::Pass => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if to_rmcp.write_all(&line).await.is_err() {
                    return;
                }
            }
            Verdict::Reply(text) => {
                let mut bytes = text.into_bytes();
                bytes.push(b'\n');
                if out.send(bytes).is_err() {
                    return;
                }
            }
            Verdict::Ignore => {}
        }
    }
}

/// Writes each line sent on `lines` to `output`, bounded, until every sender is gone.
pub async fn write_client<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        let line = bound(line);
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

/// What rmcp writes to: whole lines, handed to the one writer.
pub struct Lines {
    partial: Vec<u8>,
    out: UnboundedSender<Vec<u8>>,
}

impl Lines {
    pub fn new(out: UnboundedSender<Vec<u8>>) -> Lines {
        Lines {
            partial: Vec::new(),
            out,
        }
    }
}

impl AsyncWrite for Lines {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&rest[..=i]);
            if self.out.send(line).is_err() {
                return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            let _ = self.out.send(line);
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match screen(line.as_bytes()) {
            Verdict::Reply(text) => serde_json::from_str(&text).unwrap(),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn invalid_requests_are_answered_under_their_id() {
        for (line, id, code) in [
            (
                r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#,
                json!(2),
                -32600,
            ),
            (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, json!(3), -32600),
            (r#"{"jsonrpc":"2.0","id":"four"}"#, json!("four"), -32600),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}"#,
                json!(5),
                -32600,
            ),
            (r#"{"id":6,"method":"ping"}"#, json!(6), -32600),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                Value::Null,
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}"#,
                json!(7),
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"method":"tools/call"}"#,
                json!(8),
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1]}"#,
                json!(9),
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
                Value::Null,
                -32600,
            ),
            ("42", Value::Null, -32600),
            ("[]", Value::Null, -32600),
        ] {
            let v = reply(line);
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
            assert_eq!(v["id"], id, "{line}: {v}");
            assert_eq!(v["error"]["code"], code, "{line}: {v}");
        }
    }

    #[test]
    fn a_line_that_is_not_json_gets_a_parse_error_with_a_null_id() {
        for line in ["not json", "{\"jsonrpc\":\"2.0\",\"id\":1", "\u{1}"] {
            let v = reply(line);
            assert_eq!(v["error"]["code"], -32700, "{line}");
            assert!(v.as_object().unwrap().contains_key("id") && v["id"].is_null());
        }
    }

    #[test]
    fn valid_messages_pass_and_notifications_are_never_answered() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
        ] {
            assert_eq!(screen(line.as_bytes()), Verdict::Pass, "{line}");
        }
        assert_eq!(screen(b"  "), Verdict::Ignore);
        // A notification with params nobody can read: no answer (rmcp drops it).
        assert_eq!(
            screen(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}"#),
            Verdict::Pass
        );
        // A batch: each request with an id is answered, notifications are not.
        let v =
            reply(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]"#);
        assert_eq!(v.as_array().unwrap().len(), 1);
        assert_eq!(v[0]["id"], 1);
    }

    #[test]
    fn echoes_are_cut_and_responses_bounded() {
        let big = "x".repeat(1 << 20);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{big}"}}}}"#
        );
        // (rmcp reads this one: its echo is cut on the way out.)
        assert_eq!(screen(line.as_bytes()), Verdict::Pass);
        let echo = json!({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":format!("no tool '{big}'"),"data":{"name":big}}});
        let out = bound(format!("{echo}\n").into_bytes());
        assert!(out.len() < 4 * ERROR_CHARS, "{}", out.len());
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["id"], 1);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .ends_with("characters in all]")
        );
        let result =
            json!({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":big}]}});
        let v: Value = serde_json::from_slice(&bound(result.to_string().into_bytes())).unwrap();
        assert_eq!(
            (v["id"].as_i64(), v["error"]["code"].as_i64()),
            (Some(2), Some(-32603))
        );
        let small = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n".to_vec();
        assert_eq!(bound(small.clone()), small);
        let params = format!(r#"{{"jsonrpc":"2.0","id":8,"method":"ping","params":"{big}"}}"#);
        assert!(reply(&params)["error"]["message"].as_str().unwrap().len() < 2 * ERROR_CHARS);
    }
}
