//! `tavern mcp`: the board as an MCP server over stdio, for agents that have no shell or
//! prefer tools. Every tool is a library call; this module only parses and renders.

mod bound;
mod feed;
pub mod server;
pub mod tools;
mod wire;

use std::process::ExitCode;

use clap::Args;

use tavern::api::{self, Board, Error, Result};

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Which tools to offer: core (the agent loop, 8 tools) or full (all 16)
    #[arg(long, default_value = "core", value_parser = ["core", "full"])]
    pub profile: String,
    /// Exactly these tools, comma-separated (names, or core / full for a whole profile)
    #[arg(
        long,
        env = "TAVERN_MCP_TOOLS",
        value_name = "A,B,C",
        value_delimiter = ','
    )]
    pub tools: Vec<String>,
    /// Register the acting agent with these capabilities (matched against tasks' `needs`)
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub capabilities: Option<Vec<String>>,
    /// Without --as or TAVERN_AGENT: act as CLIENT-PID, PID being the client process, the
    /// name the hooks of `tavern setup CLIENT` register the session under
    #[arg(long, value_name = "CLIENT")]
    pub client: Option<String>,
    /// Print the tools/list result of this profile and exit (to measure or review it)
    #[arg(long)]
    pub list_tools: bool,
}

/// The tools of a profile or an explicit list.
pub fn select(profile: &str, names: &[String]) -> Result<Vec<&'static tools::Def>> {
    let names: Vec<&str> = names
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    let wanted: Vec<&str> = if names.is_empty() {
        vec![profile]
    } else {
        names
    };
    let mut out: Vec<&'static tools::Def> = Vec::new();
    for name in wanted {
        let add: Vec<&'static tools::Def> = match name {
            "core" => tools::ALL.iter().filter(|d| d.core).collect(),
            "full" => tools::ALL.iter().collect(),
            n => vec![tools::find(n).ok_or_else(|| {
                Error::usage(format!(
                    "--tools: no tool '{n}'; the tools are: {} (or core, full)",
                    tools::ALL
                        .iter()
                        .map(|d| d.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?],
        };
        for d in add {
            if !out.iter().any(|o| o.name == d.name) {
                out.push(d);
            }
        }
    }
    // In the order of the agent loop, whatever order they were named in.
    out.sort_by_key(|d| tools::ALL.iter().position(|a| a.name == d.name));
    Ok(out)
}

/// The `tools/list` result of a selection, as a client receives it.
pub fn tools_list_json(selected: &[&'static tools::Def]) -> String {
    let tools: Vec<rmcp::model::Tool> = selected.iter().map(|d| d.tool()).collect();
    serde_json::json!({ "tools": tools }).to_string()
}

/// `tavern mcp`: the acting agent from `as_actor` (--as) or TAVERN_AGENT, else (with
/// --client) the client's process, else the user the environment names, as every
/// front-end finds them (`api::named_agent`, `api::named_actor`); the board, from `board`,
/// once it is needed.
pub fn command(
    board: impl FnOnce() -> Result<Board>,
    as_actor: Option<String>,
    a: McpArgs,
) -> Result<ExitCode> {
    let explicit = api::named_agent(as_actor).or_else(|| {
        a.client
            .as_ref()
            .map(|c| api::agents::session_name(c, api::client_process()))
    });
    let named = explicit.clone().or_else(|| api::named_actor(None));
    let actor = match named {
        // Listing the tools acts as nobody; serving them acts for someone, named.
        None if a.list_tools => String::new(),
        named => api::acting_name(named)?,
    };
    run(board, actor, explicit.is_some(), a)
}

/// Serves the board on stdin/stdout until the client closes the connection.
/// `explicit_actor` is the agent named by --as or TAVERN_AGENT: it is registered at the
/// first tool call, with the client (this server's parent, past any shell) as the holder of
/// its claims.
pub fn run(
    board: impl FnOnce() -> Result<Board>,
    actor: String,
    explicit_actor: bool,
    a: McpArgs,
) -> Result<ExitCode> {
    let selected = select(&a.profile, &a.tools)?;
    if a.list_tools {
        let text = tools_list_json(&selected);
        std::io::Write::write_all(&mut std::io::stdout(), format!("{text}\n").as_bytes())
            .map_err(|e| Error::io("stdout", "write to", e))?;
        return Ok(ExitCode::SUCCESS);
    }
    let board = board()?;
    // Every change this server makes is logged as having come through MCP.
    api::via("mcp");
    let registration = explicit_actor.then(|| tools::Registration {
        capabilities: a.capabilities.clone(),
        holder: api::client_process(),
        done: std::sync::Mutex::new(false),
    });
    let ctx = tools::Ctx {
        board,
        actor,
        registration,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", "start", e))?;
    let served = runtime.block_on(async move {
        use rmcp::ServiceExt;
        // The client's lines are checked on their way to rmcp (wire::read_client), and
        // everything to the client goes through one bounded writer (wire::write_client).
        let (out, lines) = tokio::sync::mpsc::unbounded_channel();
        let writer = tokio::spawn(wire::write_client(tokio::io::stdout(), lines));
        let (from_client, to_rmcp) = tokio::io::duplex(1 << 16);
        let reader = tokio::spawn(wire::read_client(
            tokio::io::stdin(),
            from_client,
            out.clone(),
        ));
        let session = async {
            let service = server::Server::new(ctx, selected)
                .serve((to_rmcp, wire::Lines::new(out)))
                .await
                .map_err(|e| {
                    Error::input(format!("mcp: the client did not start a session: {e}"))
                })?;
            service
                .waiting()
                .await
                .map_err(|e| Error::input(format!("mcp: the session ended with an error: {e}")))?;
            Ok::<(), Error>(())
        };
        let result = session.await;
        // The session is over: nothing more is read, and what was written is sent.
        reader.abort();
        let _ = writer.await;
        result
    });
    // Not waiting for a read of stdin that may never end.
    runtime.shutdown_background();
    served?;
    Ok(ExitCode::SUCCESS)
}
