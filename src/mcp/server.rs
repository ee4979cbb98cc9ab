//! The MCP server: tools of the chosen profile, documents as resources, the agent loop
//! as instructions, and change notifications for clients that subscribe.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::feed::{self, Change};
use super::tools::{Ctx, Def};
use tavern::api::{self, Command, Error, Input, Names, Region, errors};

/// The agent loop, for the model: the server's instructions and the `tavern://guide` resource.
pub const GUIDE: &str = include_str!("guide.md");

#[derive(Clone)]
pub struct Server {
    ctx: Arc<Ctx>,
    tools: Arc<Vec<&'static Def>>,
    /// URIs subscribed to with resources/subscribe (clients of the older protocol).
    subscribed: Arc<Mutex<HashSet<String>>>,
    changes: broadcast::Sender<Change>,
    /// Listeners made before a listen was acknowledged, each for the `listen` call that
    /// follows its acknowledgment (see `accepted_subscription_filter`).
    listening: Arc<Mutex<VecDeque<broadcast::Receiver<Change>>>>,
}

impl Server {
    pub fn new(ctx: Ctx, tools: Vec<&'static Def>) -> Server {
        let (changes, _) = broadcast::channel(256);
        Server {
            ctx: Arc::new(ctx),
            tools: Arc::new(tools),
            subscribed: Arc::default(),
            changes,
            listening: Arc::default(),
        }
    }

    /// Starts following the board for changes, once; the feed runs while anyone listens.
    fn follow(&self) {
        feed::start(self.ctx.board.clone(), self.changes.clone());
    }

    fn instructions(&self) -> String {
        let names: Vec<&str> = self.tools.iter().map(|d| d.name).collect();
        format!(
            "{GUIDE}\nYou act as `{}`. Tools here: {}.\n",
            self.ctx.actor,
            names.join(", ")
        )
    }
}

/// How the tools word what a library message names: each input as the argument that
/// gives it (or where a human gives what no tool takes), each command in the use cases'
/// own words.
pub(super) struct Tools;

impl Names for Tools {
    fn input(&self, input: Input) -> String {
        match input {
            Input::Actor => "the server's --as or TAVERN_AGENT",
            Input::Force => "--force at the command line",
            Input::IfRev => "if_rev",
            Input::AddRemove => "add/remove",
            Input::Nested => "--nested at the command line",
            Input::Resolution => "text",
            other => other.name(),
        }
        .to_string()
    }

    fn command(&self, command: &Command) -> String {
        command.name()
    }
}

/// A library error as the tool error a model reads: the error object every front-end
/// gives, with what its code means, its message bounded.
pub fn tool_error(e: &Error) -> CallToolResult {
    let report = errors::Report::explained(e, &errors::message(e, &Tools));
    let text = serde_json::to_string(&report).unwrap_or_default();
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn doc_uri(region: Region, id: &str) -> String {
    format!("tavern://{}/{id}", region.dir())
}

/// `tavern://tasks/ID` and the like, as a region and an id.
fn parse_doc_uri(uri: &str) -> Option<(Region, &str)> {
    let rest = uri.strip_prefix("tavern://")?;
    let (region, id) = rest.split_once('/')?;
    Some((Region::parse(region)?, id))
}

/// Resources per page of resources/list.
const RESOURCE_PAGE: usize = 200;

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("tavern", env!("CARGO_PKG_VERSION")))
        .with_instructions(self.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.tools.iter().map(|d| d.tool()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|d| d.name == name).map(|d| d.tool())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(def) = self.tools.iter().find(|d| d.name == request.name).copied() else {
            let names: Vec<&str> = self.tools.iter().map(|d| d.name).collect();
            return Err(McpError::invalid_params(
                format!(
                    "no tool '{}' here; this server's tools: {}",
                    super::bound::message(&request.name),
                    names.join(", ")
                ),
                None,
            ));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let ctx = self.ctx.clone();
        // Library calls block (locks, fsync): run them off the runtime's only thread so the
        // connection keeps reading and notifying meanwhile.
        let done = tokio::task::spawn_blocking(move || {
            // Every call is the agent's heartbeat (the first one registers it).
            ctx.touch()?;
            def.call(&ctx, args)
        })
        .await;
        let result = match done {
            Ok(Ok(v)) => {
                let v = super::bound::capped_value(v);
                CallToolResult::success(vec![ContentBlock::text(v.to_string())])
            }
            Ok(Err(e)) => tool_error(&e),
            Err(e) => tool_error(&Error::input(format!("{}: the call failed: {e}", def.name))),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let start: usize = match request.and_then(|r| r.cursor) {
            Some(c) => c
                .parse()
                .map_err(|_| McpError::invalid_params("unknown cursor", None))?,
            None => 0,
        };
        let board = self.ctx.board.clone();
        let docs = tokio::task::spawn_blocking(move || api::docs::ids(&board))
            .await
            .unwrap_or_default();
        let mut resources = Vec::new();
        if start == 0 {
            resources.push(
                Resource::new("tavern://guide", "guide")
                    .with_description("How an agent works with this board: the loop")
                    .with_mime_type("text/markdown"),
            );
            resources.push(
                Resource::new("tavern://summary", "summary")
                    .with_description("Where things stand: agents, findings, tasks, questions")
                    .with_mime_type("text/markdown"),
            );
        }
        for (region, id) in docs.iter().skip(start).take(RESOURCE_PAGE) {
            resources.push(
                Resource::new(doc_uri(*region, id), format!("{}/{id}", region.dir()))
                    .with_mime_type("text/markdown"),
            );
        }
        let mut result = ListResourcesResult::with_all_items(resources);
        if start + RESOURCE_PAGE < docs.len() {
            result.next_cursor = Some((start + RESOURCE_PAGE).to_string());
        }
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("tavern://{region}/{id}", "document")
                .with_description(
                    "A document as on disk; region is tasks, observations or questions",
                )
                .with_mime_type("text/markdown"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.clone();
        let ctx = self.ctx.clone();
        let read_uri = uri.clone();
        let text = tokio::task::spawn_blocking(move || -> Result<String, String> {
            match read_uri.as_str() {
                "tavern://guide" => Ok(GUIDE.to_string()),
                "tavern://summary" => {
                    let v = api::summary::summary(
                        &ctx.board,
                        None,
                        chrono::Duration::hours(1),
                        Some(api::summary::LIMIT),
                    )
                    .map_err(|e| e.to_string())?;
                    Ok(v.markdown(&Tools))
                }
                other => {
                    let (region, id) =
                        parse_doc_uri(other).ok_or_else(|| format!("no resource {other}"))?;
                    api::validate_id(id).map_err(|e| e.to_string())?;
                    match api::docs::show(&ctx.board, &format!("{}/{id}", region.dir())) {
                        Ok(api::docs::Shown::Doc(doc))
                            if doc.region == region && doc.id() == id =>
                        {
                            Ok(doc.raw)
                        }
                        Ok(_) => Err(format!("no resource {other}")),
                        Err(e) => Err(e.to_string()),
                    }
                }
            }
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?
        .map_err(|e| {
            McpError::resource_not_found(
                super::bound::message(&e),
                Some(json!({"uri": super::bound::message(&uri)})),
            )
        })?;
        let (mut text, cut) = super::bound::cut(&text, 0, super::bound::RESOURCE_CHARS);
        if let Some(c) = cut {
            text.push_str(&format!(
                "\n\n[cut after {} of {} characters: use the show tool with an offset for the rest]\n",
                c.shown, c.total
            ));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri)]).into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let first = {
            let mut subs = self.subscribed.lock().unwrap_or_else(|e| e.into_inner());
            let first = subs.is_empty();
            subs.insert(request.uri);
            first
        };
        if first {
            self.follow();
            // Forward changes to this (older-protocol) client while it stays subscribed.
            let mut rx = self.changes.subscribe();
            let subscribed = self.subscribed.clone();
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(change) = feed::next(&mut rx).await {
                    let wanted = {
                        let subs = subscribed.lock().unwrap_or_else(|e| e.into_inner());
                        if subs.is_empty() {
                            break;
                        }
                        change.among(&subs)
                    };
                    for uri in wanted {
                        if peer
                            .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    if change.list_changed && peer.notify_resource_list_changed().await.is_err() {
                        return;
                    }
                }
            });
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.clone();
        // The acknowledgment goes out when this returns, and `listen` runs only after it:
        // a client may change the board in between. So the board is followed, and this
        // listen's receiver made, now.
        self.follow();
        self.listening
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(self.changes.subscribe());
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // Any receiver waiting is at least as old as this listen's acknowledgment.
        let waiting = self
            .listening
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let mut rx = waiting.unwrap_or_else(|| {
            self.follow();
            self.changes.subscribe()
        });
        let accepted = context.accepted().clone();
        let uris: HashSet<String> = accepted
            .resource_subscriptions
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let list_changed = accepted.resources_list_changed == Some(true);
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                change = feed::next(&mut rx) => {
                    let Some(change) = change else { return Ok(()) };
                    for uri in change.among(&uris) {
                        if context.sink().notify_resource_updated(uri).await.is_err() {
                            return Ok(());
                        }
                    }
                    if list_changed && change.list_changed
                        && context.sink().notify_resource_list_changed().await.is_err()
                    {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {}
}
