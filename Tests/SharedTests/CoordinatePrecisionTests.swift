import NIOCore
import OnTheMapShared
import Testing

/// A pin's coordinates are stored as the nearest double to what the client sent, however many digits it wrote.
@Suite struct CoordinatePrecisionTests {
    @Test func coordinatesWithManyDigitsReadAsTheNearestDouble() throws {
        for text in ["-122.0838511111111", "37.38605211111111111111111111", "-0.000000000000000000123456789", "89.99999999999999"] {
            let input = try LocationInput.decode(Array(#"{"latitude":0,"longitude":\#(text)}"#.utf8))
            #expect(input.longitude == Double(text), "\(text)")
        }
    }

    @Test func aPinWrittenOutReadsBackTheSame() throws {
        let pin = LocationInput(mapString: "Mountain View, CA", latitude: 37.386052, longitude: -122.0838511111111)
        #expect(try LocationInput.decode(pin.json.readableBytesView) == pin)
    }
}
