//! How the page words what the library's messages name: each input as the page takes it
//! (an override is a button on the task's page, not `--force`), each command as the human
//! who runs the server types it.

use tavern::api::{Command, Input, Names};

pub struct Page;

impl Names for Page {
    fn input(&self, input: Input) -> String {
        match input {
            Input::Force => "Override on the task's page (logged)",
            Input::IfRev => "a fresh look (the page shows the current rev)",
            Input::Actor => "tavern serve --as NAME",
            Input::Choice => "one of the options",
            Input::Nested => "tavern init --nested at a terminal",
            other => other.name(),
        }
        .to_string()
    }

    /// Commands are what the human who runs the server types at a terminal.
    fn command(&self, command: &Command) -> String {
        format!("tavern {}", command.name())
    }
}
