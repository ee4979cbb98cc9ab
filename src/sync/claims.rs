//! Claims across machines (DESIGN §12): on a board connected to a git remote, a claim and
//! every transition of a claimed task are confirmed by the remote before they count.
//!
//! Each task has its own ref on the remote, `refs/tavern/claims/<task-id>`, pointing at a
//! small commit (an empty tree; the previous record as parent) whose message is the
//! record: task, agent, the clone it came from, state, epoch and time. The first claim
//! creates the ref with `--force-with-lease=REF:` (git refuses if it exists); every later
//! change pushes a new record with `--force-with-lease=REF:<the sha it replaces>`. That
//! lease is the compare-and-swap and the fence: whoever pushed from a stale record loses.
//! Claims of different tasks touch different refs, so they never wait for one another.
//!
//! The clone keeps the last record it saw or pushed at the same ref name locally, so the
//! common case is one push; only a rejected push fetches the ref to learn the winner.
//!
//! Liveness across machines is the record's `at`: every confirmed transition renews it,
//! and so does `tavern agent heartbeat` ([`renew`]). A record held for longer than the
//! board's lease without renewal may be taken over from any clone (epoch + 1), through the
//! same compare-and-swap; the old holder's next push is rejected and it is told who holds
//! the task now.

use chrono::{DateTime, Utc};

use crate::board::Board;
use crate::error::{Error, Result};

use super::git::{Git, Output};

/// Where claim records live, on the remote and in every clone.
pub const REF_PREFIX: &str = "refs/tavern/claims/";

/// How often a claim retries after its push lost to a change it could still build on
/// (a released or expired record) before it gives up as a conflict.
const MAX_ATTEMPTS: usize = 8;

/// One claim record, as pushed to the remote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The commit holding it.
    pub sha: String,
    pub task: String,
    /// Who holds (or last held) the task; empty when the task is free.
    pub agent: String,
    /// The clone that pushed it: `host:/path/of/the/project`.
    pub origin: String,
    /// The task's state as of this record.
    pub state: String,
    /// How many times the task changed hands; a takeover or a new claim adds one.
    pub epoch: u64,
    /// When it was pushed (claim, transition or renewal): liveness across machines.
    pub at: DateTime<Utc>,
}

impl Record {
    /// The record holds the task: an agent, in a state that is neither claimable nor final.
    pub fn held(&self, board: &Board) -> bool {
        let w = &board.config.workflow;
        !self.agent.is_empty() && !w.is_claimable(&self.state) && !w.is_terminal(&self.state)
    }

    /// A held record whose holder has not renewed it within the board's lease.
    pub fn expired(&self, board: &Board, now: DateTime<Utc>) -> bool {
        self.held(board) && now - self.at > crate::agents::lease(board)
    }

    fn message(&self) -> String {
        let what = if self.agent.is_empty() {
            format!("{} is {}", self.task, self.state)
        } else {
            format!("{} {} by {}", self.task, self.state, self.agent)
        };
        format!(
            "tavern claim: {what}\n\ntask: {}\nagent: {}\norigin: {}\nstate: {}\nepoch: {}\nat: {}\n",
            self.task,
            self.agent,
            self.origin,
            self.state,
            self.epoch,
            crate::time::stamp_millis(self.at)
        )
    }

    /// Parses a record from its commit message; None if it is not one.
    fn parse(sha: &str, message: &str) -> Option<Record> {
        let mut r = Record {
            sha: sha.to_string(),
            task: String::new(),
            agent: String::new(),
            origin: String::new(),
            state: String::new(),
            epoch: 0,
            at: DateTime::<Utc>::UNIX_EPOCH,
        };
        let mut seen_at = false;
        for line in message.lines().skip(1) {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.strip_prefix(' ').unwrap_or(value);
            match key {
                "task" => r.task = value.to_string(),
                "agent" => r.agent = value.to_string(),
                "origin" => r.origin = value.to_string(),
                "state" => r.state = value.to_string(),
                "epoch" => r.epoch = value.parse().ok()?,
                "at" => {
                    r.at = DateTime::parse_from_rfc3339(value)
                        .ok()?
                        .with_timezone(&Utc);
                    seen_at = true;
                }
                _ => {}
            }
        }
        (!r.task.is_empty() && !r.state.is_empty() && seen_at).then_some(r)
    }

    /// Who holds the task, said for a person: `a1 (claimed, from host:/p, at …)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, from {}, at {})",
            if self.agent.is_empty() {
                "nobody"
            } else {
                &self.agent
            },
            self.state,
            self.origin,
            crate::time::stamp(self.at)
        )
    }
}

/// What a claim or transition asks the remote to record.
#[derive(Clone, Debug)]
pub struct Step<'a> {
    pub task: &'a str,
    pub actor: &'a str,
    /// `claim` (a new holder) rather than a move of a held task.
    pub claim: bool,
    /// The state the task is in, as this clone's copy says, and the one it moves to.
    pub from: &'a str,
    pub to: &'a str,
    /// A human's `--force`: the move goes through whoever holds the task.
    pub force: bool,
    /// On a claim, the agent this clone's copy says holds the task (another one): the
    /// claim is a takeover, allowed only if the remote's record of that hold expired.
    pub local_holder: Option<&'a str>,
    /// A sweep's release of this agent's claim: allowed only if the remote's record is that
    /// agent's and expired too (or the remote never heard of the claim).
    pub expired_hold_of: Option<&'a str>,
}

/// The remote took the new record.
#[derive(Clone, Debug)]
pub struct Pushed {
    pub remote: String,
    pub record: Record,
    /// The record it replaced, if any (to put back if the local write then fails).
    pub previous: Option<Record>,
    /// The expired hold this claim took over.
    pub took_over: Option<Record>,
}

/// What the remote said.
#[derive(Clone, Debug)]
pub enum Confirmed {
    Pushed(Box<Pushed>),
    /// Another record holds the task (or it is final, or it was taken from this actor):
    /// this clone's copy must become the record's state, and the step fails with exit 3.
    Lost {
        remote: String,
        record: Record,
    },
    /// A takeover was asked but the remote has no record of the local hold (a `--local`
    /// claim, or one made before the board was connected): the local hold stands.
    NoRecord,
}

/// The remote to confirm with: None when the board is not connected.
pub fn remote(board: &Board) -> Result<Option<String>> {
    super::remote(board)
}

fn git(board: &Board) -> Git {
    Git::new(board.project())
}

/// The ref of a task's record: `refs/tavern/claims/<task-id>`, the id as it is when it is
/// a valid ref name component. An id the board accepts may not be one (`a..b`, `x.lock`,
/// `v1.`): then every byte other than `a-z 0-9 _ -` is written `%XX` (`a%2E%2Eb`). Such
/// an id always has a byte that is encoded and no id has a `%`, so no two ids share a ref.
pub fn ref_name(task: &str) -> String {
    format!("{REF_PREFIX}{}", ref_component(task))
}

fn ref_component(task: &str) -> String {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-';
    let safe = !task.is_empty()
        && task.bytes().all(|b| plain(b) || b == b'.')
        && !task.starts_with('.')
        && !task.ends_with('.')
        && !task.contains("..")
        && !task.ends_with(".lock");
    if safe {
        return task.to_string();
    }
    task.bytes()
        .map(|b| {
            if plain(b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The repository's common directory (where refs and config live), if the board is in one.
fn common_dir(board: &Board) -> Option<std::path::PathBuf> {
    super::repo::Repo::find(board.project()).map(|r| r.common_dir)
}

/// Points this clone's copy of a task's record at `sha` (no git started when the refs are
/// plain files).
fn set_local(board: &Board, g: &Git, name: &str, sha: &str) -> Result<()> {
    if common_dir(board).is_some_and(|c| super::git::write_ref_file(&c, name, sha)) {
        return Ok(());
    }
    let out = g.output(&["update-ref", name, sha], None)?;
    if !out.success {
        return Err(git_error(g, "update-ref", &out));
    }
    Ok(())
}

/// This clone, as records name it.
fn origin(board: &Board) -> String {
    format!(
        "{}:{}",
        crate::agents::host_name(),
        board.project().display()
    )
}

/// The record this clone last saw for `task`, from its local copy of the ref.
pub fn known(board: &Board, task: &str) -> Result<Option<Record>> {
    let name = ref_name(task);
    // Most claims are of a task with no record yet: the refs' files say so, no git needed.
    if let Some(c) = common_dir(board)
        && super::git::read_ref_file(&c, &name) == super::git::RefLookup::Absent
    {
        return Ok(None);
    }
    read_ref(&git(board), &name)
}

fn read_ref(g: &Git, name: &str) -> Result<Option<Record>> {
    let out = g.output(
        &[
            "for-each-ref",
            "--format=%(objectname)%00%(contents)%00",
            name,
        ],
        None,
    )?;
    if !out.success {
        return Err(git_error(g, "for-each-ref", &out));
    }
    Ok(out
        .stdout
        .split_once('\0')
        .and_then(|(sha, rest)| Record::parse(sha.trim(), rest.trim_end_matches(['\0', '\n']))))
}

fn git_error(g: &Git, what: &str, out: &Output) -> Error {
    Error::Git {
        command: format!("git {what}"),
        dir: g.dir().to_path_buf(),
        message: out.stderr.trim().to_string(),
    }
}

/// The remote could not be reached or refused: nothing was confirmed.
fn unconfirmed_error(board: &Board, step: &Step, remote: &str, why: &str) -> Error {
    let what = if step.claim {
        format!("the claim of {}", step.task)
    } else {
        format!("moving {} to {}", step.task, step.to)
    };
    Error::Unconfirmed {
        task: step.task.to_string(),
        remote: remote.to_string(),
        message: format!(
            "cannot confirm {what} with the remote '{remote}' ({}): {why}; nothing was changed",
            board.project().display()
        ),
    }
}

/// Fetches the remote's record of `task` into this clone's copy (removing the copy when
/// the remote has none) and returns it.
fn refresh(board: &Board, step: &Step, remote: &str) -> Result<Option<Record>> {
    let g = git(board);
    let name = ref_name(step.task);
    let spec = format!("+{name}:{name}");
    let out = g.output(
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            remote,
            &spec,
        ],
        None,
    )?;
    if !out.success {
        if out.stderr.contains("couldn't find remote ref") {
            let _ = g.output(&["update-ref", "-d", &name], None)?;
            return Ok(None);
        }
        return Err(unconfirmed_error(
            board,
            step,
            remote,
            &format!("fetching its record failed: {}", first_line(&out.stderr)),
        ));
    }
    read_ref(&g, &name)
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .to_string()
}

/// The empty tree every record commit has: an object git knows without storing it.
fn empty_tree(board: &Board) -> &'static str {
    let sha256 = common_dir(board)
        .and_then(|c| std::fs::read_to_string(c.join("config")).ok())
        .is_some_and(|t| {
            super::git::config_lookup(&t, "extensions.objectformat")
                == super::git::Lookup::Set("sha256".into())
        });
    if sha256 {
        "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
    } else {
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    }
}

/// Writes a record's commit object locally and returns its sha: one `git commit-tree`,
/// the message on its standard input.
fn commit(board: &Board, record: &Record, parent: Option<&str>) -> Result<String> {
    let g = git(board);
    let tree = empty_tree(board);
    let mut args = vec![
        "-c",
        "user.name=tavern",
        "-c",
        "user.email=tavern@localhost",
        "commit-tree",
        "--no-gpg-sign",
        tree,
    ];
    if let Some(p) = parent {
        args.push("-p");
        args.push(p);
    }
    let message = record.message();
    let out = g.output(&args, Some(message.as_bytes()))?;
    if !out.success {
        return Err(git_error(&g, "commit-tree", &out));
    }
    Ok(out.stdout.trim().to_string())
}

/// How a push of one ref ended.
enum PushResult {
    Done,
    /// The lease did not hold: the remote's ref is not what we expected.
    Stale,
    /// The remote could not update the ref: another push held its lock, or (rarely) the
    /// remote is broken. Retried after a fetch; said as unconfirmed if it persists.
    Busy(String),
    /// Could not reach the remote, or it refused (a hook, permissions).
    Failed(String),
}

/// Pushes `sha` to the ref of `task` only if the remote's ref is `expected` (absent when
/// None); `sha` None deletes the ref under the same lease.
fn push(
    g: &Git,
    remote: &str,
    task: &str,
    sha: Option<&str>,
    expected: Option<&str>,
) -> Result<PushResult> {
    let name = ref_name(task);
    let spec = format!("{}:{name}", sha.unwrap_or(""));
    let lease = format!("--force-with-lease={name}:{}", expected.unwrap_or(""));
    let out = g.output(
        &[
            "push",
            "--porcelain",
            "--no-verify",
            "--no-recurse-submodules",
            &lease,
            remote,
            &spec,
        ],
        None,
    )?;
    Ok(push_result(&out, &name))
}

fn push_result(out: &Output, name: &str) -> PushResult {
    // Porcelain: one line per ref, `FLAG\tFROM:TO\tSUMMARY`.
    let line = out.stdout.lines().find(|l| {
        l.split('\t')
            .nth(1)
            .is_some_and(|s| s.ends_with(&format!(":{name}")))
    });
    if out.success {
        return PushResult::Done;
    }
    match line {
        Some(l) if l.contains("(stale info)") => PushResult::Stale,
        Some(l) if l.contains("(failed to update ref)") || l.contains("(failed to lock)") => {
            PushResult::Busy(l.split('\t').nth(2).unwrap_or(l).trim().to_string())
        }
        Some(l) => PushResult::Failed(l.split('\t').nth(2).unwrap_or(l).trim().to_string()),
        None => PushResult::Failed(first_line(&out.stderr)),
    }
}

/// What to do with what we know of the remote's record.
enum Decision {
    Go {
        epoch: u64,
        took_over: Option<Record>,
    },
    Lost,
}

fn decide(
    board: &Board,
    step: &Step,
    rec: Option<&Record>,
    now: DateTime<Utc>,
) -> Option<Decision> {
    if let Some(holder) = step.expired_hold_of {
        return Some(match rec {
            None => Decision::Go {
                epoch: 1,
                took_over: None,
            },
            Some(r) if r.agent == holder && r.expired(board, now) => Decision::Go {
                epoch: r.epoch,
                took_over: Some(r.clone()),
            },
            Some(_) => Decision::Lost,
        });
    }
    let Some(r) = rec else {
        if step.local_holder.is_some() {
            return None; // Takeover of a hold the remote never saw: the local hold stands.
        }
        return Some(Decision::Go {
            epoch: 1,
            took_over: None,
        });
    };
    let mine = r.agent == step.actor;
    if r.held(board) {
        if mine {
            return Some(Decision::Go {
                epoch: r.epoch,
                took_over: None,
            });
        }
        if step.force && !step.claim {
            return Some(Decision::Go {
                epoch: r.epoch,
                took_over: None,
            });
        }
        if step.claim && r.expired(board, now) {
            return Some(Decision::Go {
                epoch: r.epoch + 1,
                took_over: Some(r.clone()),
            });
        }
        return Some(Decision::Lost);
    }
    let w = &board.config.workflow;
    // A finished task moved on again (`reopen`) from the state its record has.
    if !step.claim && w.is_terminal(&r.state) && step.from == r.state {
        return Some(Decision::Go {
            epoch: r.epoch,
            took_over: None,
        });
    }
    if step.claim && w.is_claimable(&r.state) {
        return Some(Decision::Go {
            epoch: r.epoch + 1,
            took_over: None,
        });
    }
    if step.claim && step.local_holder.is_some() && !w.is_terminal(&r.state) {
        return None;
    }
    if step.force && !step.claim {
        return Some(Decision::Go {
            epoch: r.epoch,
            took_over: None,
        });
    }
    // A final task, or (for a move) one that is no longer held by this actor.
    Some(Decision::Lost)
}

/// Before `claim --next` tries candidates on a connected board: every record on the
/// remote, fetched in one exchange, so that tasks other clones hold or finished are skipped
/// instead of each being learnt by losing a push to it. Unreachable: exit 7.
pub fn fetch_for_next(
    board: &Board,
    remote: &str,
) -> Result<std::collections::HashMap<String, Record>> {
    let g = git(board);
    let spec = format!("+{REF_PREFIX}*:{REF_PREFIX}*");
    let out = g.output(
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            remote,
            &spec,
        ],
        None,
    )?;
    if !out.success {
        return Err(Error::Unconfirmed {
            task: "the next task".into(),
            remote: remote.to_string(),
            message: format!(
                "cannot learn the claims on the remote '{remote}' ({}): {}; nothing was claimed",
                board.project().display(),
                first_line(&out.stderr)
            ),
        });
    }
    Ok(all_known(board)?
        .into_iter()
        .map(|r| (r.task.clone(), r))
        .collect())
}

/// What `claim --next` knows of the remote's records before it tries candidates, from one
/// `git ls-remote` (no objects sent): the records whose copy in this clone is the remote's
/// (`known`), and the refs that differ (`changed`: another clone claimed, moved or released
/// that task since this clone last looked). Unreachable: exit 7.
#[derive(Debug, Default)]
pub struct Survey {
    pub known: std::collections::HashMap<String, Record>,
    changed: std::collections::HashSet<String>,
}

impl Survey {
    /// The remote's record of `task` is not the one this clone has.
    pub fn changed(&self, task: &str) -> bool {
        self.changed.contains(&ref_name(task))
    }
}

/// See [`Survey`].
pub fn survey(board: &Board, remote: &str) -> Result<Survey> {
    let g = git(board);
    let pattern = format!("{REF_PREFIX}*");
    let out = g.output(&["ls-remote", "--refs", remote, &pattern], None)?;
    if !out.success {
        return Err(Error::Unconfirmed {
            task: "the next task".into(),
            remote: remote.to_string(),
            message: format!(
                "cannot learn the claims on the remote '{remote}' ({}): {}; nothing was claimed",
                board.project().display(),
                first_line(&out.stderr)
            ),
        });
    }
    let mut theirs: std::collections::HashMap<&str, &str> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let (sha, name) = l.split_once('\t')?;
            Some((name.trim(), sha.trim()))
        })
        .collect();
    let mut survey = Survey::default();
    for r in all_known(board)? {
        let name = ref_name(&r.task);
        if theirs.remove(name.as_str()) == Some(r.sha.as_str()) {
            survey.known.insert(r.task.clone(), r);
        } else {
            survey.changed.insert(name);
        }
    }
    survey
        .changed
        .extend(theirs.into_keys().map(str::to_string));
    Ok(survey)
}

/// Whether `claim --next` should try a task, given the remote's record of it: no record,
/// a free one, or one this actor holds.
pub fn worth_trying(board: &Board, record: Option<&Record>, actor: &str) -> bool {
    record.is_none_or(|r| {
        r.agent == actor || (board.config.workflow.is_claimable(&r.state) && !r.held(board))
    })
}

/// How many of the best candidates of one priority `claim --next` spreads its agents over
/// on a connected board.
pub const SPREAD: usize = 16;

/// On a connected board, agents on different machines see one another's claims only by
/// losing a race to them, so if all went for the very best task they would queue on it,
/// one push and one fetch per loser per task. `claim --next` therefore starts each agent at
/// its own place among the first [`SPREAD`] candidates of the best priority (by a hash of
/// its name) and goes on from there, wrapping round; priorities are kept.
pub fn spread(candidates: &mut [crate::doc::Document], actor: &str) {
    let Some(first) = candidates.first().map(|d| d.priority()) else {
        return;
    };
    let lead = candidates
        .iter()
        .take(SPREAD)
        .take_while(|d| d.priority() == first)
        .count();
    if lead > 1 {
        // FNV-1a: stable across runs and machines.
        let hash = actor.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        candidates[..lead].rotate_left((hash % lead as u64) as usize);
    }
}

/// Confirms `step` with `remote`: pushes the new record under a lease on the one this
/// clone knows, and on a rejection fetches the remote's, decides again, and retries while
/// the step can still build on it. Called under the task's lock, before the local write.
pub fn confirm(board: &Board, remote: &str, step: &Step) -> Result<Confirmed> {
    let g = git(board);
    let mut known = known(board, step.task)?;
    let mut fresh = false;
    // A takeover decides on the remote's word only.
    if step.local_holder.is_some() {
        known = refresh(board, step, remote)?;
        fresh = true;
    }
    let mut busy = None;
    for _ in 0..MAX_ATTEMPTS {
        let now = crate::time::now();
        let decision = decide(board, step, known.as_ref(), now);
        let (epoch, took_over) = match decision {
            None => return Ok(Confirmed::NoRecord),
            Some(Decision::Lost) if fresh => {
                return Ok(Confirmed::Lost {
                    remote: remote.to_string(),
                    record: known.expect("a lost decision has a record"),
                });
            }
            Some(Decision::Lost) => {
                known = refresh(board, step, remote)?;
                fresh = true;
                continue;
            }
            Some(Decision::Go { epoch, took_over }) => (epoch, took_over),
        };
        let w = &board.config.workflow;
        let holder = if w.is_claimable(step.to) {
            String::new()
        } else if step.claim {
            step.actor.to_string()
        } else {
            // A forced move keeps the holder; a holder's own move keeps itself.
            known
                .as_ref()
                .map(|r| r.agent.clone())
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| step.actor.to_string())
        };
        let mut record = Record {
            sha: String::new(),
            task: step.task.to_string(),
            agent: holder,
            origin: origin(board),
            state: step.to.to_string(),
            epoch,
            at: now,
        };
        let expected = known.as_ref().map(|r| r.sha.clone());
        record.sha = commit(board, &record, expected.as_deref())?;
        match push(
            &g,
            remote,
            step.task,
            Some(&record.sha),
            expected.as_deref(),
        )? {
            PushResult::Done => {
                let _ = set_local(board, &g, &ref_name(step.task), &record.sha);
                return Ok(Confirmed::Pushed(Box::new(Pushed {
                    remote: remote.to_string(),
                    record,
                    previous: known,
                    took_over,
                })));
            }
            PushResult::Stale => {
                known = refresh(board, step, remote)?;
                fresh = true;
                busy = None;
            }
            PushResult::Busy(why) => {
                known = refresh(board, step, remote)?;
                fresh = true;
                busy = Some(why);
            }
            PushResult::Failed(why) => {
                return Err(unconfirmed_error(board, step, remote, &why));
            }
        }
    }
    if let Some(why) = busy {
        return Err(unconfirmed_error(board, step, remote, &why));
    }
    Err(Error::conflict(
        board.rel(&board.doc_path(crate::doc::Region::Tasks, step.task)),
        format!(
            "the remote '{remote}' record of {} kept changing ({MAX_ATTEMPTS} attempts); retry",
            step.task
        ),
    ))
}

/// What the loser of a race (or a fenced former holder) is told: who holds the task now.
pub fn lost_message(
    board: &Board,
    name: &str,
    status: &str,
    actor: &str,
    remote: &str,
    record: &Record,
) -> String {
    let whence = format!(
        "confirmed by the remote '{remote}': {} from {} at {}, epoch {}",
        record.state,
        record.origin,
        crate::time::stamp(record.at),
        record.epoch
    );
    let now = if record.agent.is_empty() {
        format!("it is {} and held by nobody", record.state)
    } else if record.agent == actor {
        format!("it is {} (by you)", record.state)
    } else {
        format!("it is held by {} ({})", record.agent, record.state)
    };
    if name == crate::workflow::CLAIM && !record.agent.is_empty() && record.agent != actor {
        let what = if record.held(board) {
            "already claimed by"
        } else {
            "already finished by"
        };
        format!(
            "{what} {} (status {}; {whence}); this clone's copy now says so",
            record.agent, record.state
        )
    } else {
        format!(
            "cannot {name}: {now}, not as this clone's copy said ({status}; {whence}); this clone's copy now says so"
        )
    }
}

/// The change that makes this clone's copy of a task say what the remote's record says,
/// or None when it already does. Logged as `remote-claim` by `actor`, whose step lost.
pub fn follow(
    board: &Board,
    doc: &crate::doc::Document,
    actor: &str,
    remote: &str,
    record: &Record,
) -> Option<crate::ops::Change> {
    use crate::doc::edit::FieldEdit;
    let w = &board.config.workflow;
    let status = doc.status().unwrap_or("");
    let holder = doc.str("claimed_by").unwrap_or("");
    let free = record.agent.is_empty() || w.is_claimable(&record.state);
    let want_holder = if free { "" } else { record.agent.as_str() };
    if !w.is_state(&record.state) || (status == record.state && holder == want_holder) {
        return None;
    }
    let mut edits = vec![FieldEdit::Set("status".into(), record.state.clone().into())];
    if free {
        edits.push(FieldEdit::Unset("claimed_by".into()));
        edits.push(FieldEdit::Unset("claimed_at".into()));
    } else if holder != want_holder {
        edits.push(FieldEdit::Set(
            "claimed_by".into(),
            record.agent.clone().into(),
        ));
        edits.push(FieldEdit::Set(
            "claimed_at".into(),
            crate::time::stamp(record.at).into(),
        ));
    }
    let entry = crate::log::Entry {
        actor: actor.to_string(),
        op: "remote-claim".into(),
        from: Some(status.to_string()),
        to: Some(record.state.clone()),
        note: Some(format!(
            "the remote '{remote}' says {} holds it ({} from {} at {}, epoch {})",
            if record.agent.is_empty() {
                "nobody"
            } else {
                &record.agent
            },
            record.state,
            record.origin,
            crate::time::stamp(record.at),
            record.epoch
        )),
        ..crate::log::Entry::default()
    };
    Some(crate::ops::Change {
        edits,
        body: None,
        entry,
    })
}

/// Puts back the record a confirmed step replaced, when the local write of that step
/// failed: the remote must not keep a claim this clone never recorded. Best effort; the
/// lease makes sure only our own record is replaced.
pub fn undo(board: &Board, pushed: &Pushed) {
    let g = git(board);
    let task = &pushed.record.task;
    let previous = pushed.previous.as_ref().map(|r| r.sha.as_str());
    if let Ok(PushResult::Done) = push(&g, &pushed.remote, task, previous, Some(&pushed.record.sha))
    {
        let name = ref_name(task);
        let _ = match previous {
            Some(p) => g.output(&["update-ref", &name, p], None),
            None => g.output(&["update-ref", "-d", &name], None),
        };
    }
}

/// What [`renew`] did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Renewed {
    /// Tasks whose record now carries a fresh time.
    pub renewed: Vec<String>,
    /// Tasks whose record had changed on the remote (taken over, released, moved).
    pub lost: Vec<String>,
}

/// Renews every record this clone knows `agent` holds: a fresh `at`, pushed under the
/// usual lease, so no other machine takes those claims over. Called by heartbeats on a
/// connected board; not connected, it does nothing.
pub fn renew(board: &Board, agent: &str) -> Result<Renewed> {
    let Some(remote) = remote(board)? else {
        return Ok(Renewed::default());
    };
    let g = git(board);
    let out = g.output(
        &[
            "for-each-ref",
            "--format=%(objectname)%00%(contents)%00",
            REF_PREFIX,
        ],
        None,
    )?;
    if !out.success {
        return Err(git_error(&g, "for-each-ref", &out));
    }
    let mut held = Vec::new();
    let mut parts = out.stdout.split('\0');
    while let (Some(sha), Some(msg)) = (parts.next(), parts.next()) {
        if let Some(r) = Record::parse(sha.trim(), msg.trim_end())
            && r.agent == agent
            && r.held(board)
        {
            held.push(r);
        }
    }
    let mut done = Renewed::default();
    for old in held {
        let mut r = old.clone();
        r.at = crate::time::now();
        r.origin = origin(board);
        r.sha = commit(board, &r, Some(&old.sha))?;
        match push(&g, &remote, &r.task, Some(&r.sha), Some(&old.sha))? {
            PushResult::Done => {
                let _ = set_local(board, &g, &ref_name(&r.task), &r.sha);
                done.renewed.push(r.task);
            }
            PushResult::Stale | PushResult::Busy(_) => done.lost.push(r.task),
            PushResult::Failed(why) => {
                let step = Step {
                    task: &r.task,
                    actor: agent,
                    claim: false,
                    from: &r.state,
                    to: &r.state,
                    force: false,
                    local_holder: None,
                    expired_hold_of: None,
                };
                return Err(unconfirmed_error(board, &step, &remote, &why));
            }
        }
    }
    Ok(done)
}

/// The actor the log names when a sync makes a task follow the remote's record.
pub const SYNC_ACTOR: &str = "tavern-sync";

/// Makes every task of this clone say what the remote's record of it (as last fetched,
/// see [`fetch_all`]) says: state and holder. A task changed here after its record was
/// written (a `--local` move) keeps its local state; its next confirmed move settles it.
/// Returns the ids of the tasks that changed, each logged as a `remote-claim` entry.
pub fn reconcile(board: &Board) -> Result<Vec<String>> {
    let remote = remote(board)?.unwrap_or_default();
    let mut changed = Vec::new();
    for record in all_known(board)? {
        if crate::id::validate(&record.task).is_err() {
            continue;
        }
        let path = board.doc_path(crate::doc::Region::Tasks, &record.task);
        if !path.exists() {
            continue;
        }
        let outcome = crate::ops::mutate(
            board,
            crate::doc::Region::Tasks,
            &record.task,
            None,
            |doc| {
                let local_later = doc
                    .str("updated_at")
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .is_some_and(|t| t.with_timezone(&Utc) > record.at);
                if local_later {
                    return Ok(None);
                }
                Ok(follow(board, doc, SYNC_ACTOR, &remote, &record))
            },
        )?;
        if outcome.changed() {
            changed.push(record.task);
        }
    }
    Ok(changed)
}

/// The claims this clone holds that the remote has not confirmed, as `(task, holder)`: a
/// held task whose record (as last fetched) names another holder or none (a `--local`
/// claim, one made before the board was connected). Empty on a board not connected. For
/// `tavern check`.
pub fn unconfirmed(board: &Board) -> Result<Vec<(String, String)>> {
    if remote(board)?.is_none() {
        return Ok(Vec::new());
    }
    let records: std::collections::HashMap<String, Record> = all_known(board)?
        .into_iter()
        .map(|r| (r.task.clone(), r))
        .collect();
    let w = &board.config.workflow;
    let scan = crate::scan::scan_matching(board, &[crate::doc::Region::Tasks], |d| {
        d.str("claimed_by").is_some_and(|a| !a.is_empty())
            && d.status()
                .is_some_and(|s| !w.is_claimable(s) && !w.is_terminal(s))
    })?;
    let mut out: Vec<(String, String)> = scan
        .docs
        .iter()
        .filter_map(|d| {
            let holder = d.str("claimed_by")?;
            let confirmed = records
                .get(d.id())
                .is_some_and(|r| r.agent == holder && r.held(board));
            (!confirmed).then(|| (d.id().to_string(), holder.to_string()))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Every record on the remote, fetched into this clone's copies (copies of records the
/// remote no longer has are removed).
pub fn fetch_all(board: &Board) -> Result<Vec<Record>> {
    let Some(remote) = remote(board)? else {
        return Ok(Vec::new());
    };
    let g = git(board);
    let spec = format!("+{REF_PREFIX}*:{REF_PREFIX}*");
    g.run(&[
        "fetch",
        "--quiet",
        "--no-tags",
        "--prune",
        "--no-write-fetch-head",
        &remote,
        &spec,
    ])?;
    all_known(board)
}

/// Every record this clone knows.
pub fn all_known(board: &Board) -> Result<Vec<Record>> {
    let g = git(board);
    let out = g.run(&[
        "for-each-ref",
        "--format=%(objectname)%00%(contents)%00",
        REF_PREFIX,
    ])?;
    let mut records = Vec::new();
    let mut parts = out.split('\0');
    while let (Some(sha), Some(msg)) = (parts.next(), parts.next()) {
        if let Some(r) = Record::parse(sha.trim(), msg.trim_end()) {
            records.push(r);
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_what_it_wrote() {
        let r = Record {
            sha: "abc".into(),
            task: "fix-login".into(),
            agent: "a: b".into(),
            origin: "host:/p".into(),
            state: "claimed".into(),
            epoch: 3,
            at: DateTime::parse_from_rfc3339("2026-11-24T10:00:00.250Z")
                .unwrap()
                .with_timezone(&Utc),
        };
        assert_eq!(Record::parse("abc", &r.message()), Some(r));
        assert_eq!(Record::parse("abc", "not a record\n\nhello: world\n"), None);
    }
}
