import OnTheMapShared

/// What the suites of this target share.
enum Fixtures {
    /// The contract's example pin (CONTRACT.md).
    static let jarrod = StudentLocation(
        objectId: ObjectID("CDHfAy8sdp"), uniqueKey: "3903878747", firstName: "Jarrod", lastName: "Parkes",
        mapString: "Huntsville, Alabama", mediaURL: "https://www.linkedin.com/in/jarrodparkes",
        latitude: 34.7303688, longitude: -86.5861037,
        createdAt: Timestamp(iso8601: "2015-02-25T01:10:38.103Z")!, updatedAt: Timestamp(iso8601: "2015-03-09T22:04:50.315Z")!)
}
