import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import TestSupport

/// A stand-in Nominatim on 127.0.0.1 that speaks the real `format=jsonv2` shape, so the upstream
/// client is tested over a real socket without leaving the machine.
///
/// Mounted paths play different upstreams: `/ok` answers with two places, `/echo` answers with the
/// query it received, `/broken` fails with 500, `/garbage` answers 200 with no JSON, `/silent` answers only once the server
/// stops, `/trickle` sends its head at once and then stalls in the body as long.
enum FakeNominatim {
    /// What the server saw of the last `/echo` request.
    actor Recorder {
        private(set) var rawQuery: String?
        private(set) var userAgent: String?
        func record(rawQuery: String, userAgent: String?) {
            self.rawQuery = rawQuery
            self.userAgent = userAgent
        }
    }

    static let mountainView = """
        [{"place_id":297426580,"licence":"Data © OpenStreetMap contributors, ODbL 1.0. http://osm.org/copyright",\
        "osm_type":"relation","osm_id":2430546,"lat":"37.3893889","lon":"-122.0832101","category":"boundary",\
        "type":"administrative","place_rank":16,"importance":0.6327,"addresstype":"city","name":"Mountain View",\
        "display_name":"Mountain View, Santa Clara County, California, United States",\
        "address":{"city":"Mountain View","county":"Santa Clara County","state":"California","ISO3166-2-lvl4":"US-CA",\
        "country":"United States","country_code":"us"},"boundingbox":["37.3557","37.4696","-122.1188","-122.0308"]},\
        {"place_id":1,"licence":"Data © OpenStreetMap contributors","osm_type":"way","osm_id":2,\
        "lat":"37.4220","lon":"-122.0841","category":"building","type":"office","place_rank":30,"importance":0.1,\
        "addresstype":"building","name":"","display_name":"1600, Amphitheatre Parkway, Mountain View, California, 94043, United States",\
        "address":{"house_number":"1600","road":"Amphitheatre Parkway","town":"Mountain View","state":"California",\
        "postcode":"94043","country":"United States","country_code":"us"},"boundingbox":["37.42","37.43","-122.09","-122.08"]}]
        """

    static func router(recorder: Recorder) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("ok/search") { _, _ in json(mountainView) }
        router.get("echo/search") { request, _ in
            await recorder.record(rawQuery: request.uri.query ?? "", userAgent: request.headers[.userAgent])
            let query = request.uri.queryParameters.get("q") ?? ""
            return json(
                """
                [{"lat":"0","lon":"0","name":"\(query)","display_name":"\(query)","address":{"country_code":"xx"}}]
                """)
        }
        router.get("broken/search") { _, _ in Response(status: .internalServerError) }
        router.get("garbage/search") { _, _ in json("<html>busy</html>") }
        router.get("silent/search") { _, _ in
            // Longer than any test waits: until the server stops, which is then not held up by it.
            try await gracefulShutdown()
            return json("[]")
        }
        router.get("trickle/search") { _, _ in
            // The head at once, then the body stalls.
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init { writer in
                    try await writer.write(ByteBuffer(string: "["))
                    try await gracefulShutdown()
                    try await writer.write(ByteBuffer(string: "]"))
                    try await writer.finish(nil)
                })
        }
        return router
    }

    private static func json(_ text: String) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    private static let quietLogger = {
        var logger = Logger(label: "fake-nominatim")
        logger.logLevel = .critical
        return logger
    }()

    /// Runs `body` with the base URL of a fake server on a free loopback port, then stops the server.
    static func withServer<T: Sendable>(
        recorder: Recorder = Recorder(),
        _ body: @escaping @Sendable (String) async throws -> T
    ) async throws -> T {
        let app = Application(
            router: router(recorder: recorder),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: quietLogger)
        return try await app.withLoopbackServer { port in
            try await body("http://127.0.0.1:\(port)")
        }
    }
}
