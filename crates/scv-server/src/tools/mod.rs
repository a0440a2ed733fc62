//! The tools offered to the model. Names, arguments and risk classes are
//! fixed interfaces (ARCHITECTURE.md). Each tool is one file holding one
//! [`Builtin`] — name, schema, risk, summary and run together — and one
//! line of [`registry::BUILTINS`]. Failures the model should read are
//! [`ToolError::Model`]; a failure of SCV itself fails the turn.
//!
//! What a tool is (`builtin.rs`) is kept apart from this file, which only
//! declares and re-exports: the registry imports every tool, and every
//! tool imports that vocabulary, so neither may live where the other is
//! imported from.

pub(crate) mod background;
pub(crate) mod bash;
mod bash_kill;
mod bash_output;
pub(crate) mod beneath;
mod builtin;
mod command;
mod edit_file;
mod list_dir;
mod mcp;
pub(crate) mod output;
mod read_file;
pub(crate) mod registry;
pub(crate) mod roots;
mod search;
mod skill;
pub(crate) mod task;
mod textfile;
pub(crate) mod tool_search;
pub(crate) mod web_fetch;
mod write_file;

pub(crate) use builtin::{ToolContext, ToolError, ToolOutput};
pub(crate) use registry::Registry;
