/// Every Redis key AuthGate uses, in one place. Keys one atomic operation touches for a user share
/// the hash tag `{u:<user id>}`, so scripts stay on one slot and the layout works on Redis Cluster.
struct RedisKeyspace: Sendable {
    let prefix: String

    func user(_ userID: String) -> String { "\(prefix){u:\(userID)}:user" }
    func identities(_ userID: String) -> String { "\(prefix){u:\(userID)}:identities" }
    /// An operator's fence on the account (see ``AuthStore/fenceAccount(userID:token:lifetime:)``).
    func fence(_ userID: String) -> String { "\(prefix){u:\(userID)}:fence" }
    func sessions(_ userID: String) -> String { "\(prefix){u:\(userID)}:sessions" }
    func session(_ userID: String, _ sessionID: String) -> String { "\(prefix){u:\(userID)}:s:\(sessionID)" }
    func identityIndex(_ provider: String, _ subject: String) -> String { "\(prefix)idn:\(provider):\(subject)" }
    func emailIndex(_ email: String) -> String { "\(prefix)email:\(email)" }
    /// Session id → user id, for operators who name a session alone.
    func sessionOwner(_ sessionID: String) -> String { "\(prefix)sid:\(sessionID)" }
    /// Every user id, scored by creation time in milliseconds (listing and paging).
    var users: String { "\(prefix)users" }
    var revocations: String { "\(prefix)revocations" }
    /// The audit trail (a stream capped near 100,000 entries).
    var audit: String { "\(prefix)audit" }
    /// The provider token revocation outbox: entry ids scored by when they are due (or leased
    /// until), and the entries by id; one hash tag, so its scripts stay on one slot.
    var providerRevocationsDue: String { "\(prefix){rv}:due" }
    var providerRevocationEntries: String { "\(prefix){rv}:entries" }
    func expiring(_ key: String) -> String { prefix + key }
}
