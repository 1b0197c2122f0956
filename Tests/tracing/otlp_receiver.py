"""An OTLP/HTTP trace receiver for the tests: takes what an OpenTelemetry exporter posts to /v1/traces
(protobuf, as the OpenTelemetry protocol defines it, decoded with its published definitions), and writes
each span as one JSON line to the file named by --out.

Usage: python3 otlp_receiver.py --port PORT --out FILE   (prints "listening on PORT" once it is)
       python3 otlp_receiver.py --port PORT --out FILE --busy N   (answers the first N exports 503)
       python3 otlp_receiver.py --port PORT --discard    (answers every export at once, reading nothing:
                                                          a collector that costs the sender nothing more)
"""
import argparse
import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def attribute_value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [attribute_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


def spans(request, export):
    for resource_spans in request.resource_spans:
        resource = {a.key: attribute_value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "service": resource.get("service.name"),
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": span.kind,
                    "attributes": {a.key: attribute_value(a.value) for a in span.attributes},
                    "links": [link.span_id.hex() for link in span.links],
                    "status": span.status.code,
                    "statusMessage": span.status.message,
                    "traceState": span.trace_state,
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "events": [
                        {"name": event.name, "attributes": {a.key: attribute_value(a.value) for a in event.attributes}}
                        for event in span.events
                    ],
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                    "export": export,
                }


def handler(out, busy):
    exports = {"answered": 0}

    class Receiver(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            exports["answered"] += 1
            if exports["answered"] <= busy:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if out is None:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            # What the exporter sent beside the spans: its request's headers, under each span.
            export = {
                "number": exports["answered"],
                "headers": {name.lower(): value for name, value in self.headers.items()},
            }
            with open(out, "a") as file:
                for span in spans(request, export):
                    file.write(json.dumps(span) + "\n")
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    return Receiver


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out")
    target.add_argument("--discard", action="store_true")
    parser.add_argument("--busy", type=int, default=0)
    arguments = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), handler(arguments.out, arguments.busy))
    print(f"listening on {arguments.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
