/// The list request most clients send: the newest 100 pins, newest first. Written with its parameters in
/// any order, with or without `skip=0`, or with none at all (the defaults), it asks for the same list, the
/// one both services keep ready to send.
public enum LatestListQuery {
    public static func matches(_ query: Substring?) -> Bool {
        guard let query, !query.isEmpty else { return true }
        return query.split(separator: "&").allSatisfy { ["limit=100", "order=-updatedAt", "skip=0"].contains($0) }
    }
}
