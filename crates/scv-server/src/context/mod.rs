//! The conversation a session keeps, and how it is kept within bounds:
//! token estimates, compaction into a model-written summary, and trimming
//! of the oldest messages by bytes.

pub mod compaction;
mod history;
pub mod trim;

#[cfg(test)]
mod properties;

pub use history::History;
