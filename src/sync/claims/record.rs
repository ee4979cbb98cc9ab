//! The claim record: what the remote holds for one task, as the message of a small commit
//! (an empty tree; the previous record as parent). Plain `key: value` lines after a
//! summary, so that `git log` of a claim ref reads as the task's history.

use chrono::{DateTime, Utc};

use crate::board::Board;

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
    /// Who made the move this record confirms (the holder, a reviewer, a human forcing
    /// it, the sweep); empty in records written before it was kept. A step whose answer
    /// was lost finds its own record by it.
    pub by: String,
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

    /// The commit message that carries the record.
    pub fn message(&self) -> String {
        let what = if self.agent.is_empty() {
            format!("{} is {}", self.task, self.state)
        } else {
            format!("{} {} by {}", self.task, self.state, self.agent)
        };
        format!(
            "tavern claim: {what}\n\ntask: {}\nagent: {}\norigin: {}\nstate: {}\nepoch: {}\nat: {}\nby: {}\n",
            self.task,
            self.agent,
            self.origin,
            self.state,
            self.epoch,
            crate::time::stamp_millis(self.at),
            self.by
        )
    }

    /// Parses a record from its commit message; None if it is not one.
    pub fn parse(sha: &str, message: &str) -> Option<Record> {
        let mut r = Record {
            sha: sha.to_string(),
            task: String::new(),
            agent: String::new(),
            origin: String::new(),
            state: String::new(),
            by: String::new(),
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
                "by" => r.by = value.to_string(),
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

    /// Parses the output of `git for-each-ref --format=%(objectname)%00%(contents)%00`:
    /// every record in it, skipping refs that hold none.
    pub fn parse_all(listing: &str) -> Vec<Record> {
        let mut records = Vec::new();
        let mut parts = listing.split('\0');
        while let (Some(sha), Some(msg)) = (parts.next(), parts.next()) {
            if let Some(r) = Record::parse(sha.trim(), msg.trim_end()) {
                records.push(r);
            }
        }
        records
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            sha: "abc".into(),
            task: "fix-login".into(),
            agent: "a: b".into(),
            origin: "host:/p".into(),
            state: "claimed".into(),
            by: "a: b".into(),
            epoch: 3,
            at: DateTime::parse_from_rfc3339("2026-11-24T10:00:00.250Z")
                .unwrap()
                .with_timezone(&Utc),
        }
    }

    #[test]
    fn a_record_reads_back_what_it_wrote() {
        let r = record();
        assert_eq!(Record::parse("abc", &r.message()), Some(r));
        assert_eq!(Record::parse("abc", "not a record\n\nhello: world\n"), None);
    }

    #[test]
    fn the_message_is_a_summary_then_one_line_per_field_with_milliseconds() {
        assert_eq!(
            record().message(),
            "tavern claim: fix-login claimed by a: b\n\ntask: fix-login\nagent: a: b\norigin: host:/p\nstate: claimed\nepoch: 3\nat: 2026-11-24T10:00:00.250Z\nby: a: b\n"
        );
        let free = Record {
            agent: String::new(),
            state: "pending".into(),
            ..record()
        };
        assert!(
            free.message()
                .starts_with("tavern claim: fix-login is pending\n")
        );
        assert_eq!(Record::parse("abc", &free.message()), Some(free));
    }

    #[test]
    fn a_message_without_task_state_or_time_or_with_a_bad_epoch_is_no_record() {
        let full = record().message();
        for drop in ["task: ", "state: ", "at: "] {
            let text: String = full
                .lines()
                .filter(|l| !l.starts_with(drop))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(Record::parse("abc", &text), None, "without {drop}");
        }
        assert_eq!(
            Record::parse("abc", &full.replace("epoch: 3", "epoch: three")),
            None
        );
        assert_eq!(
            Record::parse("abc", &full.replace("at: 2026", "at: yesterday 2026")),
            None
        );
        // The summary line is not read as a field, unknown fields are ignored.
        let odd = "task: x\n\ntask: y\nstate: done\nat: 2026-11-24T10:00:00Z\nnew: field\n";
        let r = Record::parse("s", odd).unwrap();
        assert_eq!(
            (r.task.as_str(), r.state.as_str(), r.epoch),
            ("y", "done", 0)
        );
    }

    #[test]
    fn a_listing_yields_every_record_and_skips_other_commits() {
        let a = record();
        let b = Record {
            sha: "def".into(),
            task: "t2".into(),
            ..record()
        };
        let listing = format!(
            "abc\0{}\0\nzzz\0a plain commit\n\0\ndef\0{}\0\n",
            a.message(),
            b.message()
        );
        assert_eq!(Record::parse_all(&listing), vec![a, b]);
        assert_eq!(Record::parse_all(""), vec![]);
    }
}
