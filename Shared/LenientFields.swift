extension KeyedDecodingContainer {
    /// The value at `key` if it is a string. Absent, `null` and any other type all read as nil: where the
    /// contract treats a number given for a name as no name at all (Udacity's session API did, and so does
    /// the gateway's sign-up), or words its own error for it (`where`).
    public func stringIfPresent(_ key: Key) -> String? {
        try? decode(String.self, forKey: key)
    }

    /// The identifier at `key`, a string or a whole number: older answers of Udacity's API and of Facebook's
    /// Graph API gave ids as JSON numbers.
    public func identifierIfPresent(_ key: Key) -> String? {
        stringIfPresent(key) ?? (try? decode(Int64.self, forKey: key)).map(String.init)
    }
}
