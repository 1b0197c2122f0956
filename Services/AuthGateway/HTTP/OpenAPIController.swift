import Foundation
import Hummingbird
import NIOCore

/// `GET /openapi.yaml`: the document describing every public route, shipped with the gateway.
struct OpenAPIController: Sendable {
    let document: ByteBuffer

    /// Reads the document from the gateway's resources once, at start-up.
    static func bundled() throws -> OpenAPIController {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml", subdirectory: "Resources") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return OpenAPIController(document: ByteBuffer(bytes: try Data(contentsOf: url)))
    }

    func addRoutes(to router: Router<GatewayRequestContext>) {
        router.get("openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"], body: .init(byteBuffer: document))
        }
    }
}
