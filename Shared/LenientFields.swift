extension KeyedDecodingContainer {
    /// The value at `key` if it is a string. Absent, `null` and any other type all read as nil: where the
    /// contract treats a number given for a name as no name at all (Udacity's session API did, and so does
    /// the gateway's sign-up), or words its own error for it (`where`).
    public func stringIfPresent(_ key: Key) -> String? {
        try? decode(String.self, forKey: key)
    }
}
