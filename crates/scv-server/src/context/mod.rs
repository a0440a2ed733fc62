//! The conversation a session keeps, and how it is kept within bounds:
//! token estimates, compaction into a model-written summary, and trimming
//! of the oldest messages by bytes.

pub(crate) mod compaction;
mod history;
pub(crate) mod trim;

#[cfg(test)]
mod properties;

pub(crate) use history::History;
