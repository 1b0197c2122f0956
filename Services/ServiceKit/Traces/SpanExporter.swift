import AsyncHTTPClient
import ContentCoding
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Ended spans, queued and exported over OTLP/HTTP in batches, off the requests' path.
///
/// A span's end appends it to the queue under a lock; nothing wakes for it. The exporter's task wakes
/// every `OTEL_BSP_SCHEDULE_DELAY`, or once the queue holds a whole batch, and sends everything queued, a
/// batch (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`) per request. Past `OTEL_BSP_MAX_QUEUE_SIZE` waiting spans, new
/// ones are dropped and counted (a warning says how many). A failed export is tried again after a pause
/// when the collector was busy or away (429, 502, 503, 504, no connection), within `OTEL_BSP_EXPORT_TIMEOUT`.
/// At graceful shutdown it sends what it holds, then stops: everything it does from then on, a send under
/// way included, ends within one `OTEL_BSP_EXPORT_TIMEOUT` (a collector away does not hold the process a
/// timeout per batch).
public final class SpanExporter: Service, Sendable {
    let settings: TraceExportSettings
    private let logger: Logger
    private let client: HTTPClient
    private let queue: Mutex<Queue>
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    /// When the exporter must be done: set at graceful shutdown.
    private let stopBy = Mutex<ContinuousClock.Instant?>(nil)

    private struct Queue {
        var spans: [FinishedSpan] = []
        var dropped = 0
    }

    public init(settings: TraceExportSettings, logger: Logger) throws(ConfigurationError) {
        self.settings = settings
        self.logger = logger
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: Self.timeAmount(settings.timeout))
        if settings.endpoint.lowercased().hasPrefix("https:") {
            var tls = TLSConfiguration.makeClientConfiguration()
            do {
                if let file = settings.certificateFile { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file)) }
                if let certificate = settings.clientCertificateFile, let key = settings.clientKeyFile {
                    tls.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                    tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
                }
            } catch {
                throw ConfigurationError("the OTLP exporter's certificates could not be read: \(error)")
            }
            configuration.tlsConfiguration = tls
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        queue = Mutex(Queue())
        (wakes, wake) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues an ended span; wakes the exporter when the queue has just filled a batch.
    func take(_ span: FinishedSpan) {
        let (batchSize, queueSize) = (settings.maxExportBatchSize, settings.maxQueueSize)
        let filledABatch = queue.withLock { queue in
            guard queue.spans.count < queueSize else {
                queue.dropped += 1
                return false
            }
            queue.spans.append(span)
            return queue.spans.count % batchSize == 0
        }
        if filledABatch { wake.yield() }
    }

    /// Sends what is queued now rather than at the next tick.
    func exportSoon() {
        wake.yield()
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { [wake, delay = settings.scheduleDelay] in
                while (try? await Task.sleep(for: delay)) != nil { wake.yield() }
            }
            await withGracefulShutdownHandler {
                for await _ in wakes { await exportQueued() }
            } onGracefulShutdown: {
                self.stopBy.withLock { $0 = ContinuousClock.now + self.settings.exportTimeout }
                self.wake.finish()
            }
            group.cancelAll()
        }
        // What the last requests ended with.
        await exportQueued()
        try? await client.shutdown()
    }

    /// Sends every span queued, a batch at a time.
    func exportQueued() async {
        while true {
            let (batch, dropped) = queue.withLock { queue in
                let batch = Array(queue.spans.prefix(settings.maxExportBatchSize))
                queue.spans.removeFirst(batch.count)
                defer { queue.dropped = 0 }
                return (batch, queue.dropped)
            }
            if dropped > 0 {
                logger.warning(
                    "spans dropped: the export queue was full",
                    metadata: ["dropped": "\(dropped)", "queue_size": "\(settings.maxQueueSize)"])
            }
            guard !batch.isEmpty else { return }
            await send(batch)
        }
    }

    private func send(_ batch: [FinishedSpan]) async {
        var body = OTLPEncoding.exportRequest(batch, resource: settings.resource)
        var request = HTTPClientRequest(url: settings.endpoint)
        request.method = .POST
        for (name, value) in settings.headers { request.headers.add(name: name, value: value) }
        request.headers.replaceOrAdd(name: "Content-Type", value: "application/x-protobuf")
        request.headers.replaceOrAdd(name: "User-Agent", value: "OnTheMap-OTLP-Exporter")
        if settings.gzip {
            body = Gzip.compress(body)
            request.headers.replaceOrAdd(name: "Content-Encoding", value: "gzip")
        }
        request.body = .bytes(ByteBuffer(bytes: body))

        let start = ContinuousClock.now
        var pause = Duration.seconds(1)
        while true {
            let failure: String
            let left = deadline(from: start) - ContinuousClock.now
            guard left > .zero, !Task.isCancelled else { return lost(batch, "no time was left to send them") }
            do {
                let response = try await client.execute(request, deadline: .now() + Self.timeAmount(min(settings.timeout, left)))
                _ = try? await response.body.collect(upTo: 1 << 20)
                if (200..<300).contains(response.status.code) { return }
                failure = "the collector answered \(response.status.code)"
                guard [429, 502, 503, 504].contains(response.status.code) else {
                    return lost(batch, failure)
                }
            } catch {
                failure = "\(error)"
            }
            guard await rest(pause, from: start) else { return lost(batch, failure) }
            pause *= 2
        }
    }

    /// When a send begun at `start` must be over: its export timeout, or the shutdown's, whichever is first.
    private func deadline(from start: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let own = start + settings.exportTimeout
        guard let stop = stopBy.withLock({ $0 }), stop < own else { return own }
        return stop
    }

    /// Waits `pause` before another try, in short steps so that a shutdown meanwhile is heeded; false, at
    /// once, when the deadline comes first (or the task is cancelled).
    private func rest(_ pause: Duration, from start: ContinuousClock.Instant) async -> Bool {
        let until = ContinuousClock.now + pause
        while ContinuousClock.now < until {
            guard until < deadline(from: start), !Task.isCancelled else { return false }
            try? await Task.sleep(for: min(.milliseconds(100), until - ContinuousClock.now))
        }
        return true
    }

    private func lost(_ batch: [FinishedSpan], _ failure: String) {
        logger.warning(
            "spans could not be exported", metadata: ["spans": "\(batch.count)", "endpoint": "\(settings.endpoint)", "error": "\(failure)"])
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .seconds(seconds) + .nanoseconds(attoseconds / 1_000_000_000)
    }
}
