//! `tavern serve`: the board in a browser, for the human who watches a team of agents.
//!
//! A loopback-only HTTP server (axum on the one current-thread tokio runtime) serving one
//! page whose assets are embedded in the binary, a JSON API over the library's read models
//! and operations, and a stream of Server-Sent Events driven by one watcher of the board.
//! It only parses and renders: every view is a library call, every action a library
//! operation run as the human who started the server.
//!
//! Security model (see `security`): every document, title and log entry is untrusted agent
//! output, so the page builds its DOM with text nodes only and the Content-Security-Policy
//! allows no inline script or style and no other origin; every request must name this
//! server in its Host header (DNS rebinding) and, when a browser sends one, come from its
//! Origin; every API call needs the per-run secret that the printed URL carries; writes
//! are POST with the secret in a header, and are made by one of the board's `humans:`.

mod live;
mod markdown;
mod routes;
mod security;
mod words;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tavern::api::{self, Board, Error, Result};

/// The port `tavern serve` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 3141;

/// What the server was asked to do.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The address to listen on, as given; anything but loopback 127.0.0.1 is refused.
    pub bind: String,
    /// 0: any free port.
    pub port: u16,
    /// Open the page in the default browser.
    pub open: bool,
}

/// What every handler shares.
pub struct App {
    /// The `.tavern` directory (re-read on every request: board.yaml may change, and the
    /// directory may disappear and come back).
    pub root: PathBuf,
    /// The human acting: `--as`, `TAVERN_AGENT` or the user; empty when nothing names
    /// one (the page is then read-only).
    pub actor: String,
    pub guard: security::Guard,
    pub live: live::Live,
}

impl App {
    /// The board as it is now.
    pub fn board(&self) -> Result<Board> {
        api::board::reopen(&self.root)
    }
}

/// The address to listen on: 127.0.0.1 (also spelled `localhost`) only.
pub fn loopback(bind: &str) -> Result<Ipv4Addr> {
    match bind {
        "127.0.0.1" | "localhost" => Ok(Ipv4Addr::LOCALHOST),
        other => Err(Error::usage(format!(
            "tavern serve listens on 127.0.0.1 only, not '{}': the page shows untrusted agent output and acts as a human, so it is never exposed to a network (from another machine, use an SSH tunnel: ssh -L 3141:127.0.0.1:3141 HOST)",
            other.escape_debug()
        ))),
    }
}

/// Runs the server until interrupted. Prints the URL (with the per-run secret) on stdout.
pub fn serve(board: &Board, actor: Option<&str>, opts: &ServeOptions) -> Result<ExitCode> {
    let ip = loopback(&opts.bind)?;
    api::via("dashboard");
    let std_listener = std::net::TcpListener::bind(SocketAddr::new(IpAddr::V4(ip), opts.port))
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                Error::usage(format!(
                    "port {} is in use (another tavern serve?): choose one with --port N, or --port 0 for any free port",
                    opts.port
                ))
            } else {
                Error::io(format!("127.0.0.1:{}", opts.port), "listen on", e)
            }
        })?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("127.0.0.1", "listen on", e))?;
    let port = std_listener
        .local_addr()
        .map_err(|e| Error::io("127.0.0.1", "listen on", e))?
        .port();
    let guard = security::Guard::new(port)?;
    let url = format!("http://127.0.0.1:{port}/?token={}", guard.secret());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::io("tokio", "start", e))?;
    let stop = shutdown()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener)
            .map_err(|e| Error::io("127.0.0.1", "listen on", e))?;
        let app = Arc::new(App {
            root: api::board::root(board).to_path_buf(),
            actor: actor.unwrap_or_default().to_string(),
            guard,
            live: live::Live::start(api::board::root(board).to_path_buf()),
        });
        let mut out = format!("tavern serve: {url}\n");
        match actor {
            Some(actor) if api::board::is_human(board, actor) => {}
            Some(actor) => out.push_str(&format!(
                "note: {actor} is not listed under humans: in board.yaml, so the page is read-only (add it there, or use --as NAME)\n"
            )),
            None => out.push_str(
                "note: nobody is named as the actor (no --as, and TAVERN_AGENT, USER and LOGNAME are all unset), so the page is read-only (use --as NAME)\n",
            ),
        }
        out.push_str(&format!(
            "board: {}\nopen the URL above in a browser (it carries this run's secret); Ctrl-C stops the server\n",
            api::board::root(board).display()
        ));
        {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(out.as_bytes()).and_then(|_| stdout.flush());
        }
        if opts.open {
            open_browser(&url);
        }
        // Not a graceful shutdown: event streams never end by themselves. A write in
        // progress runs on a blocking thread, which the runtime lets finish.
        tokio::select! {
            served = axum::serve(listener, routes::router(app)) => {
                served.map_err(|e| Error::io("127.0.0.1", "serve on", e))
            }
            () = stop => Ok(()),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on SIGINT or SIGTERM (taken over before the URL is printed, so that a signal
/// sent as soon as it is seen stops the server cleanly).
fn shutdown() -> Result<impl std::future::Future<Output = ()>> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(|e| Error::io("signals", "handle", e))?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = tx.send(());
        }
    });
    Ok(async move {
        let _ = rx.await;
    })
}

/// Starts the desktop's browser on the URL; a failure is a warning (the URL is printed).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let started = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = started {
        eprintln!(
            "warning: could not start {opener} to open the page ({e}); open the URL above by hand"
        );
    }
}

// The flags of `tavern serve`. (Not a doc comment: clap would take it for the command's
// help text over its own; see `cli::Command`.)
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The port (0: any free port)
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Open the page in the default browser
    #[arg(long)]
    pub open: bool,
    /// The address to listen on: 127.0.0.1 only (anything else is refused)
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub bind: String,
}

impl ServeArgs {
    pub fn options(&self) -> ServeOptions {
        ServeOptions {
            bind: self.bind.clone(),
            port: self.port,
            open: self.open,
        }
    }
}

/// `tavern serve` on `board`, as `actor` (a human under `humans:` acts; anyone else reads).
pub fn run(board: &Board, actor: Option<&str>, args: &ServeArgs) -> Result<ExitCode> {
    serve(board, actor, &args.options())
}
