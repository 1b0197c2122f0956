/// The list request most clients send: the newest 100 pins, newest first. Written with its parameters in
/// any order, with or without `skip=0`, or with none at all (the defaults), it asks for the same list, the
/// one both services keep ready to send.
public enum LatestListQuery {
    private static let parameters: [[UInt8]] = ["limit=100", "order=-updatedAt", "skip=0"].map { Array($0.utf8) }

    public static func matches(_ query: Substring?) -> Bool {
        guard let query, !query.isEmpty else { return true }
        // By bytes, not Characters: this runs on every hot read.
        return query.utf8.split(separator: UInt8(ascii: "&")).allSatisfy { parameter in
            parameters.contains { $0.elementsEqual(parameter) }
        }
    }
}
