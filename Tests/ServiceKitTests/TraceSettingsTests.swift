import Testing

@testable import ServiceKit

/// W3C `traceparent` read and written, and the OpenTelemetry settings the exporter is made from.
@Suite struct TraceSettingsTests {
    @Test func aTraceparentIsReadAsTheRecommendationWritesItAndWrittenBackTheSame() throws {
        let header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let identity = try #require(SpanIdentity(traceparent: header, traceState: "team=maps"))
        #expect(identity.traceID == TraceID(high: 0x0af7_6519_16cd_43dd, low: 0x8448_eb21_1c80_319c))
        #expect(identity.spanID == 0xb7ad_6b71_6920_3331 && identity.sampled && identity.traceState == "team=maps")
        #expect(identity.traceparent == header && identity.traceID.hex == "0af7651916cd43dd8448eb211c80319c")
        #expect(SpanIdentity(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")?.sampled == false)
        // Other flags beside "sampled" are carried by the bit they set, not the whole byte.
        #expect(SpanIdentity(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03")?.sampled == true)
        // A later version may add fields after a dash.
        #expect(SpanIdentity(traceparent: "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-later") != nil)
        let refused = [
            "", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",  // no flags
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  // uppercase
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",  // no trace
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  // no parent
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  // the forbidden version
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",  // version 00 has four fields exactly
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",  // a later version's fields after a dash
            "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01", "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
        ]
        for header in refused { #expect(SpanIdentity(traceparent: header) == nil, "\(header)") }
    }

    @Test func newIdsAreNeverZeroOrRepeated() {
        let ids = (0..<100_000).map { _ in SpanIdentity.newID() }
        #expect(!ids.contains(0) && Set(ids).count == ids.count)
    }

    @Test func theEndpointAndTheOtherSettingsAreReadAsTheSpecificationNamesThem() throws {
        #expect(try TraceExportSettings.fromEnvironment(serviceName: "auth-gateway", [:]) == nil, "no endpoint: no traces")
        let base = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        let plain = try #require(try TraceExportSettings.fromEnvironment(serviceName: "auth-gateway", base))
        #expect(plain.endpoint == "http://collector:4318/v1/traces")
        #expect(plain.resource.map(\.key) == ["service.name"] && plain.resource[0].value == "auth-gateway")
        #expect(plain.scheduleDelay == .seconds(5) && plain.exportTimeout == .seconds(30) && plain.timeout == .seconds(10))
        #expect(plain.maxQueueSize == 2048 && plain.maxExportBatchSize == 512 && !plain.gzip && plain.headers.isEmpty)

        let full = try #require(
            try TraceExportSettings.fromEnvironment(
                serviceName: "auth-gateway",
                base.merging([
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://traces.example/otlp/spans",
                    "OTEL_EXPORTER_OTLP_HEADERS": "x-general=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": " api-key = a%2Cb%3Dc , tenant=maps",
                    "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                    "OTEL_SERVICE_NAME": "gateway-east", "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,deployment.environment=prod",
                    "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "4000", "OTEL_BSP_MAX_QUEUE_SIZE": "10000",
                    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1000",
                ]) { $1 }))
        #expect(full.endpoint == "https://traces.example/otlp/spans", "a traces endpoint is used as written")
        #expect(full.headers.map { "\($0.name)=\($0.value)" } == ["api-key=a,b=c", "tenant=maps"], "the traces setting before the general one")
        #expect(full.timeout == .milliseconds(2500) && full.gzip)
        #expect(full.resource.map { "\($0.key)=\($0.value)" } == ["service.name=gateway-east", "deployment.environment=prod"])
        #expect(full.scheduleDelay == .milliseconds(100) && full.exportTimeout == .seconds(4))
        #expect(full.maxQueueSize == 10000 && full.maxExportBatchSize == 1000)

        for off in [["OTEL_SDK_DISABLED": "true"], ["OTEL_TRACES_EXPORTER": "none"]] {
            #expect(try TraceExportSettings.fromEnvironment(serviceName: "auth-gateway", base.merging(off) { $1 }) == nil, "\(off)")
        }
    }

    @Test func aMalformedSettingIsRefusedByName() {
        let base = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"]
        let wrong = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "not a url"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"), ("OTEL_EXPORTER_OTLP_COMPRESSION", "br"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s"), ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"), ("OTEL_BSP_SCHEDULE_DELAY", "0"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "-1"), ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"), ("OTEL_TRACES_EXPORTER", "jaeger"),
            ("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/etc/key.pem"), ("OTEL_RESOURCE_ATTRIBUTES", "=nokey"),
        ]
        for (name, value) in wrong {
            do {
                _ = try TraceExportSettings.fromEnvironment(serviceName: "auth-gateway", base.merging([name: value]) { $1 })
                Issue.record("\(name)=\(value) was taken")
            } catch {
                #expect(error.description.contains(name), "\(error.description)")
            }
        }
        let refusal = #expect(throws: ConfigurationError.self) {
            try TraceExportSettings.fromEnvironment(serviceName: "auth-gateway", base.merging(["OTEL_BSP_SCHEDULE_DELAY": "0"]) { $1 })
        }
        #expect(refusal?.description == "OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds above 0, not 0")
    }
}
