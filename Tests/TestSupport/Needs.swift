import Foundation
import Synchronization
import Testing

/// What a test needs beyond PostgreSQL and the Swift toolchain, looked for once per test process: a test
/// whose needs are missing is skipped with a line saying what to install. `scripts/test.sh` installs all of
/// it, so there every test runs.
public enum Needs {
    /// django-oidc-provider served by waitress: the OpenID Connect provider of the sign-in tests.
    public static let django = python(
        ["oidc_provider", "waitress"],
        install: "pip install django-oidc-provider==0.9.0 Django==5.2.19 waitress==3.0.2 (the OpenID Connect provider)")
    /// GDAL's `ogrinfo` and Python's geojson: the GeoJSON feed read as its users read it.
    public static let gdal = ConditionTrait.enabled(
        if: hasCommand("ogrinfo") && pythonHas(["geojson"]), "needs GDAL and Python's geojson: apt-get install gdal-bin; pip install geojson")
    public static let schemathesis = python(["schemathesis"], install: "pip install schemathesis")
    public static let openAPIValidator = python(["openapi_spec_validator"], install: "pip install openapi-spec-validator")
    /// The PMTiles writer the basemap tests make their archives with.
    public static let pmtiles = python(["pmtiles"], install: "pip install pmtiles")
    /// OpenTelemetry's protocol definitions, which the traces test's receiver decodes with.
    public static let openTelemetryProto = python(["opentelemetry.proto"], install: "pip install opentelemetry-proto")

    static func python(_ modules: [String], install: String) -> ConditionTrait {
        .enabled(if: pythonHas(modules), "needs Python's \(modules.joined(separator: ", ")): \(install)")
    }

    /// Whether `python3` imports every one of `modules`; asked once per set.
    static func pythonHas(_ modules: [String]) -> Bool {
        let key = modules.joined(separator: ",")
        if let known = found.withLock({ $0[key] }) { return known }
        let answer = succeeds(["python3", "-c", modules.map { "import \($0)" }.joined(separator: "; ")])
        found.withLock { $0[key] = answer }
        return answer
    }

    static func hasCommand(_ name: String) -> Bool {
        succeeds(["sh", "-c", "command -v \(name)"])
    }

    private static let found = Mutex<[String: Bool]>([:])

    private static func succeeds(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
