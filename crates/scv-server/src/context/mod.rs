//! The conversation a session keeps: the canonical message history.

mod history;

pub use history::History;
