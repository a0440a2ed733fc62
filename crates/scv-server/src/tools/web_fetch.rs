//! web_fetch: one web page or text file by URL, HTML turned into
//! Markdown (`crate::egress::fetch`). Risk `network`: a URL whose host
//! `sandbox_allowed_domains` lists runs without asking; any other asks.

use super::builtin::{arg, parse, schema_of, Builtin, ToolContext, ToolOutput, ToolResult};
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;

pub(crate) const TOOL: Builtin = Builtin {
    name: "web_fetch",
    risk: Risk::Network,
    description: "Fetch a web page or text file by URL (GET) and read it: HTML comes back as Markdown (headings, links, code blocks and tables kept), text as it is; other content types are refused. Long pages are cut (the result says so). Hosts in the user's allowlist are fetched at once; any other asks the user first. Redirects are followed only to allowed hosts; no cookies or credentials are sent.",
    parameters: schema_of::<FetchArgs>,
    summary: |arguments| format!("Fetch {}", arg(arguments, "url")),
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

#[derive(Deserialize, JsonSchema)]
struct FetchArgs {
    /// The http:// or https:// URL to fetch.
    url: String,
}

/// Whether a call runs without asking: its URL's host is listed.
pub(crate) fn runs_unasked(arguments: &Value, web: &crate::egress::fetch::WebLimits) -> bool {
    crate::egress::fetch::allowed_url(&web.allowed, arg(arguments, "url"))
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: FetchArgs = parse(arguments)?;
    let fetched = tokio::select! {
        fetched = crate::egress::fetch::fetch(ctx.web, &args.url) => fetched,
        () = ctx.cancel.cancelled() => return Ok(ToolOutput::error("[cancelled]")),
    };
    match fetched {
        Ok(page) => Ok(ToolOutput {
            success: true,
            output: page.text,
            truncated: page.truncated,
        }),
        Err(why) => Ok(ToolOutput::error(format!("web_fetch: {why}"))),
    }
}
