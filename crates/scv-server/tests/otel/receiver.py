"""A real OTLP/HTTP receiver for the tests: decodes what SCV sends with the
official `opentelemetry-proto` package and prints one JSON line per span
(`/v1/traces`) and per metric (`/v1/metrics`) on stdout, after a first
line with the port it listens on.

Each line: name, kind, trace_id, span_id, parent_span_id (hex), status
code, attributes (OTLP AnyValue as plain JSON), and the resource's
service.name. A metric line: metric (its name), unit, and points (each
with attributes, and sum and count for a histogram, value for a sum).
Answers 200 with an empty Export*ServiceResponse; with
the argument `fail`, answers 503 to every export (a broken collector).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

FAIL = len(sys.argv) > 1 and sys.argv[1] == "fail"


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind) if kind else None


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if FAIL:
            self.send_response(503)
            self.end_headers()
            return
        if self.path == "/v1/metrics" and self.headers.get("Content-Type") == "application/x-protobuf":
            self.metrics(body)
            return
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            print(json.dumps({"error": f"{self.path} {self.headers.get('Content-Type')}"}), flush=True)
            self.send_response(400)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {kv.key: value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    print(
                        json.dumps(
                            {
                                "name": span.name,
                                "kind": span.kind,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex(),
                                "status": span.status.code,
                                "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                                "service": resource.get("service.name"),
                            }
                        ),
                        flush=True,
                    )
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def metrics(self, body):
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    points = []
                    if metric.HasField("histogram"):
                        for p in metric.histogram.data_points:
                            attributes = {kv.key: value(kv.value) for kv in p.attributes}
                            points.append({"attributes": attributes, "sum": p.sum, "count": p.count})
                    elif metric.HasField("sum"):
                        for p in metric.sum.data_points:
                            attributes = {kv.key: value(kv.value) for kv in p.attributes}
                            v = p.as_double if p.HasField("as_double") else p.as_int
                            points.append({"attributes": attributes, "value": v})
                    print(json.dumps({"metric": metric.name, "unit": metric.unit, "points": points}), flush=True)
        reply = ExportMetricsServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
