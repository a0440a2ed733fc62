//! A tool as the model is offered it.

use serde_json::Value;
use std::sync::Arc;

/// Name, description and argument schema: what every wire renders into
/// its own tool definition. The schema is shared (`Arc`): a registry's
/// specs are cloned into every request of every session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Arc<Value>,
}
