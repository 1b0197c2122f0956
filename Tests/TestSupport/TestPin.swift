import NIOCore
import OnTheMapShared

/// The pin a test posts when any valid pin will do: the value, and the JSON a client sends for it (the
/// bytes `onthemap` sends, from the same writer).
public enum TestPin {
    public static let input = LocationInput(mapString: "Lagos, Nigeria", mediaURL: "https://a.example", latitude: 6.45, longitude: 3.39)
    public static let json = String(buffer: input.json)
}
