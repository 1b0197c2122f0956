extension OnTheMapClient {
    /// `DELETE /v1/accounts/me`: erases the session's account and every pin and event of it, past and present,
    /// and ends the session. Answers what was erased. It cannot be undone.
    public func eraseAccount() async throws(OnTheMapError) -> ErasedAccount {
        let answer = try await send(.DELETE, "/v1/accounts/me", authorized: true)
        // 202: begun, and the gateway finishes it by itself.
        guard answer.status == 200 || answer.status == 202 else { throw Self.sessionRouteError(answer) }
        return try Self.decode(ErasureAnswer.self, SessionWire.stripped(answer.body), answer).erased
    }

    private struct ErasureAnswer: Decodable {
        var erased: ErasedAccount
    }
}

/// What `eraseAccount()` took away: the account and how many pins it had, each with its whole history.
public struct ErasedAccount: Hashable, Sendable, Decodable {
    public var key: String
    /// Pins erased from the log, deleted ones included; nil while `pending`.
    public var pins: Int?
    /// The account can no longer log in and its sessions have ended, but the pins' service did not answer:
    /// the gateway erases the pins itself once it does.
    public var pending: Bool

    public init(key: String, pins: Int?, pending: Bool = false) {
        self.key = key
        self.pins = pins
        self.pending = pending
    }

    enum CodingKeys: String, CodingKey {
        case key, pins, pending
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(String.self, forKey: .key)
        pins = try container.decodeIfPresent(Int.self, forKey: .pins)
        pending = try container.decodeIfPresent(Bool.self, forKey: .pending) ?? false
    }
}
