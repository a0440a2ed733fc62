//! OpenTelemetry traces over OTLP/HTTP (protobuf): a trace per turn with a
//! span for each provider request and each tool call, named and
//! attributed after the GenAI semantic conventions (`invoke_agent scv`,
//! `chat MODEL`, `execute_tool NAME`; `gen_ai.*` attributes), and two
//! metrics: the histogram `gen_ai.client.token.usage` (per request, by
//! `gen_ai.token.type` `input` / `output`) and the counter `scv.cost`
//! (USD, per priced request), exported to `/v1/metrics` every minute
//! (`OTEL_METRIC_EXPORT_INTERVAL`).
//!
//! On when `otel_endpoint` is set (its `/v1/traces`) or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! variables are (the SDK reads them, and `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_BSP_*`); off, nothing here runs. Spans go to the SDK's batch
//! processor: a bounded queue ([`MAX_QUEUE`] spans; past it, spans are
//! dropped) drained by its own thread, so a slow or dead collector never
//! slows or fails a turn. A failed export is a warning in the log at most
//! once a minute. Prompts, answers, tool arguments and results are
//! exported only with `otel_log_content = true`, each cut at
//! [`MAX_CONTENT_BYTES`].

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::trace::{SpanBuilder, TracerProvider as _};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};
use opentelemetry_sdk::Resource;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Spans waiting for export, at most.
pub(crate) const MAX_QUEUE: usize = 2048;
/// An exported prompt, answer, tool argument or result, at most.
pub(crate) const MAX_CONTENT_BYTES: usize = 16 * 1024;
/// One export's time limit.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a failing collector is mentioned in the log.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The process's exporter and tracer.
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    meters: SdkMeterProvider,
    /// `gen_ai.client.token.usage`.
    tokens: Histogram<u64>,
    /// `scv.cost` (USD).
    cost: Counter<f64>,
    /// `otel_log_content`.
    log_content: bool,
}

impl Telemetry {
    /// `None` when neither `otel_endpoint` nor the standard variables ask
    /// for traces (or the exporter cannot be built: said in the log).
    pub(crate) fn start(endpoint: Option<&str>, log_content: bool) -> Option<Arc<Telemetry>> {
        let from_env = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
        if endpoint.is_none() && !from_env {
            return None;
        }
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_timeout(EXPORT_TIMEOUT);
        if let Some(endpoint) = endpoint {
            builder = builder.with_endpoint(signal_url(endpoint, "traces"));
        }
        let mut metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_timeout(EXPORT_TIMEOUT);
        if let Some(endpoint) = endpoint {
            metrics = metrics.with_endpoint(signal_url(endpoint, "metrics"));
        }
        let (exporter, metrics) = match (builder.build(), metrics.build()) {
            (Ok(exporter), Ok(metrics)) => (exporter, metrics),
            (Err(err), _) | (_, Err(err)) => {
                tracing::warn!("OpenTelemetry export is off: {err}");
                return None;
            }
        };
        let config = BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUE)
            .build();
        let processor = BatchSpanProcessor::builder(Warning {
            inner: exporter,
            warned: Mutex::new(None),
        })
        .with_batch_config(config)
        .build();
        let resource = Resource::builder()
            .with_service_name("scv-server")
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.clone())
            .build();
        let tracer = provider.tracer("scv-server");
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics).build())
            .with_resource(resource)
            .build();
        let meter = meters.meter("scv-server");
        let tokens = meter
            .u64_histogram("gen_ai.client.token.usage")
            .with_unit("{token}")
            .with_description("Tokens used per provider request, by gen_ai.token.type")
            .build();
        let cost = meter
            .f64_counter("scv.cost")
            .with_unit("USD")
            .with_description("What provider requests cost, at the model's price")
            .build();
        Some(Arc::new(Telemetry {
            provider,
            tracer,
            meters,
            tokens,
            cost,
            log_content,
        }))
    }

    /// A turn's trace: its root span, `invoke_agent scv`.
    pub(crate) fn turn(
        self: &Arc<Self>,
        session_id: &str,
        turn_id: &str,
        provider: &str,
        model: &str,
        prompt: &str,
    ) -> TurnTrace {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", "scv"),
            KeyValue::new("gen_ai.provider.name", provider.to_string()),
            KeyValue::new("gen_ai.request.model", model.to_string()),
            KeyValue::new("gen_ai.conversation.id", session_id.to_string()),
            KeyValue::new("scv.turn.id", turn_id.to_string()),
        ];
        if self.log_content {
            attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                messages_json("user", prompt),
            ));
        }
        let span = self.tracer.build(
            SpanBuilder::from_name("invoke_agent scv")
                .with_kind(SpanKind::Internal)
                .with_attributes(attributes),
        );
        TurnTrace {
            telemetry: self.clone(),
            cx: Context::new().with_span(span),
            provider: provider.to_string(),
            model: model.to_string(),
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // What is queued goes out (bounded by the export timeout).
        let _ = self.provider.shutdown();
        let _ = self.meters.shutdown();
    }
}

/// `endpoint` as a signal's URL: `BASE/v1/traces`, `BASE/v1/metrics` (an
/// endpoint written with `/v1/traces` is taken as its base).
fn signal_url(endpoint: &str, signal: &str) -> String {
    let endpoint = endpoint.trim_end_matches('/');
    let base = endpoint.strip_suffix("/v1/traces").unwrap_or(endpoint);
    format!("{base}/v1/{signal}")
}

/// `text` cut at [`MAX_CONTENT_BYTES`] (on a character boundary).
fn bounded(text: &str) -> String {
    if text.len() <= MAX_CONTENT_BYTES {
        return text.to_string();
    }
    let mut end = MAX_CONTENT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// One message as the GenAI conventions write `gen_ai.*.messages`.
fn messages_json(role: &str, text: &str) -> String {
    serde_json::json!([{"role": role, "parts": [{"type": "text", "content": bounded(text)}]}])
        .to_string()
}

/// A turn's root span and what its children need.
pub(crate) struct TurnTrace {
    telemetry: Arc<Telemetry>,
    cx: Context,
    provider: String,
    model: String,
}

/// A span under a turn; ended by [`ChildSpan::end`] (or when dropped).
pub(crate) struct ChildSpan {
    span: opentelemetry_sdk::trace::Span,
    log_content: bool,
    /// A provider request's: what its metrics carry, and the telemetry
    /// that records them.
    metered: Option<(Arc<Telemetry>, [KeyValue; 3])>,
}

impl TurnTrace {
    fn child(&self, name: String, kind: SpanKind, attributes: Vec<KeyValue>) -> ChildSpan {
        let span = self.telemetry.tracer.build_with_context(
            SpanBuilder::from_name(name)
                .with_kind(kind)
                .with_attributes(attributes),
            &self.cx,
        );
        ChildSpan {
            span,
            log_content: self.telemetry.log_content,
            metered: None,
        }
    }

    /// `chat MODEL`: one provider request.
    pub(crate) fn request(&self, max_output_tokens: u64) -> ChildSpan {
        let mut span = self.child(
            format!("chat {}", self.model),
            SpanKind::Client,
            vec![
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", self.provider.clone()),
                KeyValue::new("gen_ai.request.model", self.model.clone()),
                KeyValue::new("gen_ai.request.max_tokens", max_output_tokens as i64),
            ],
        );
        span.metered = Some((
            self.telemetry.clone(),
            [
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", self.provider.clone()),
                KeyValue::new("gen_ai.request.model", self.model.clone()),
            ],
        ));
        span
    }

    /// `execute_tool NAME`: one tool call.
    pub(crate) fn tool(&self, name: &str, call_id: &str, arguments: &str) -> ChildSpan {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", name.to_string()),
            KeyValue::new("gen_ai.tool.call.id", call_id.to_string()),
            KeyValue::new("gen_ai.tool.type", "function"),
        ];
        if self.telemetry.log_content {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.arguments",
                bounded(arguments),
            ));
        }
        self.child(
            format!("execute_tool {name}"),
            SpanKind::Internal,
            attributes,
        )
    }

    /// Ends the turn's span with its totals and outcome (`error`: the
    /// `turn.failed` code, or `cancelled`).
    pub(crate) fn end(
        self,
        usage: Option<&crate::model::Usage>,
        cost_usd: Option<f64>,
        error: Option<&str>,
    ) {
        let span = self.cx.span();
        if let Some(usage) = usage {
            for attribute in usage_attributes(usage) {
                span.set_attribute(attribute);
            }
        }
        if let Some(cost) = cost_usd {
            span.set_attribute(KeyValue::new("scv.cost_usd", cost));
        }
        if let Some(error) = error {
            span.set_attribute(KeyValue::new("error.type", error.to_string()));
            span.set_status(Status::error(error.to_string()));
        }
        span.end();
    }
}

fn usage_attributes(usage: &crate::model::Usage) -> [KeyValue; 5] {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    [
        KeyValue::new("gen_ai.usage.input_tokens", n(usage.input_tokens())),
        KeyValue::new("gen_ai.usage.output_tokens", n(usage.output_tokens())),
        KeyValue::new("gen_ai.usage.cache_read.input_tokens", n(usage.cache_read)),
        KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            n(usage.cache_write),
        ),
        KeyValue::new("scv.usage.reasoning_tokens", n(usage.reasoning)),
    ]
}

impl ChildSpan {
    /// The W3C `traceparent` of this span (`00-TRACE-SPAN-FLAGS`), for
    /// the requests the call makes (MCP's `_meta.traceparent`).
    pub(crate) fn traceparent(&self) -> String {
        use opentelemetry::trace::Span as _;
        let context = self.span.span_context();
        format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        )
    }

    /// A provider request's answer: usage, finish reason, the text (with
    /// `otel_log_content`).
    pub(crate) fn answered(
        mut self,
        usage: Option<&crate::model::Usage>,
        cost_usd: Option<f64>,
        finish_reason: Option<&str>,
        text: Option<&str>,
    ) {
        if let (Some((telemetry, attributes)), Some(usage)) = (&self.metered, usage) {
            for (kind, tokens) in [
                ("input", usage.input_tokens()),
                ("output", usage.output_tokens()),
            ] {
                let mut attributes = attributes.to_vec();
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                telemetry.tokens.record(tokens, &attributes);
            }
            if let Some(cost) = cost_usd {
                telemetry.cost.add(cost, attributes);
            }
        }
        if let Some(usage) = usage {
            for attribute in usage_attributes(usage) {
                self.span.set_attribute(attribute);
            }
        }
        if let Some(reason) = finish_reason {
            self.span.set_attribute(KeyValue::new(
                "gen_ai.response.finish_reasons",
                Value::Array(vec![opentelemetry::StringValue::from(reason.to_string())].into()),
            ));
        }
        if let (true, Some(text)) = (self.log_content, text) {
            self.span.set_attribute(KeyValue::new(
                "gen_ai.output.messages",
                messages_json("assistant", text),
            ));
        }
        self.span.end();
    }

    /// A tool call's result (its text with `otel_log_content`).
    pub(crate) fn completed(mut self, success: bool, result: &str) {
        if self.log_content {
            self.span
                .set_attribute(KeyValue::new("gen_ai.tool.call.result", bounded(result)));
        }
        if !success {
            self.span
                .set_attribute(KeyValue::new("error.type", "tool_error"));
            self.span.set_status(Status::error("the tool call failed"));
        }
        self.span.end();
    }

    /// The request or call failed (`error`: a short cause, never content).
    pub(crate) fn failed(mut self, error: &str) {
        self.span
            .set_attribute(KeyValue::new("error.type", error.to_string()));
        self.span.set_status(Status::error(error.to_string()));
        self.span.end();
    }
}

/// The OTLP exporter, saying in the log (at most once a minute) that the
/// collector cannot be reached.
#[derive(Debug)]
struct Warning<E> {
    inner: E,
    warned: Mutex<Option<Instant>>,
}

impl<E: SpanExporter> SpanExporter for Warning<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(err) = &result {
            let mut warned = crate::sync::lock(&self.warned);
            if warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                *warned = Some(Instant::now());
                tracing::warn!("OpenTelemetry export failed (spans dropped): {err}");
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_bounds() {
        assert_eq!(
            signal_url("http://c:4318", "traces"),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            signal_url("http://c:4318/", "metrics"),
            "http://c:4318/v1/metrics"
        );
        assert_eq!(
            signal_url("http://c:4318/v1/traces", "metrics"),
            "http://c:4318/v1/metrics"
        );
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_CONTENT_BYTES + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }
}
