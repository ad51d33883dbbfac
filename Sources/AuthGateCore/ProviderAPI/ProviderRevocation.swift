#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// A provider refresh token waiting in the revocation outbox: put there (sealed, as the identity
/// held it) when an identity leaves AuthGate, and worked by ``ProviderRevocationWorker`` until the
/// provider has revoked it or refused it for good.
public struct ProviderRevocation: Sendable, Hashable {
    /// The entry's own id (a UUID).
    public var id: String
    /// `apple` or `google`.
    public var provider: String
    /// The client id the token was issued to (Apple's calls need it); nil for Google.
    public var clientID: String?
    /// The identity's subject: with `provider`, what the sealed token is bound to.
    public var subject: String
    /// The user the identity belonged to (for operators; the user may be gone).
    public var userID: String
    /// The token, sealed by ``ProviderTokenSealer`` (never stored in the clear).
    public var sealedToken: String
    public var createdAt: Date
    /// Calls made so far.
    public var attempts: Int
    /// When the next call is due.
    public var nextAttemptAt: Date
    /// The last call's failure, as logged (never the token).
    public var lastError: String?
    /// Set when the entry was given up on: a permanent refusal, or too many failed calls.
    public var failedAt: Date?
    /// The lease this worker holds on the entry while it calls the provider (set by a claim, not
    /// stored): a settlement is applied only while it is still held.
    public var lease: Date?

    public init(
        id: String, provider: String, clientID: String?, subject: String, userID: String, sealedToken: String, createdAt: Date,
        attempts: Int = 0, nextAttemptAt: Date? = nil, lastError: String? = nil, failedAt: Date? = nil
    ) {
        self.id = id
        self.provider = provider
        self.clientID = clientID
        self.subject = subject
        self.userID = userID
        self.sealedToken = sealedToken
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt ?? createdAt
        self.lastError = lastError
        self.failedAt = failedAt
    }

    /// How long after it is queued an entry is first due: the removal it is queued ahead of
    /// (a deletion, an unlinking) has landed or failed by then, and the worker revokes only a
    /// token whose identity no longer holds it.
    public static let firstCallDelay = Duration.seconds(30)

    /// An entry revoking the token `identity` holds, first due ``firstCallDelay`` after `now`;
    /// nil when it holds none.
    public static func revoking(_ identity: IdentityRecord, now: Date) -> ProviderRevocation? {
        guard let sealed = identity.sealedRefreshToken else { return nil }
        return ProviderRevocation(
            id: UUIDBytes.random(), provider: identity.provider, clientID: identity.refreshTokenClientID, subject: identity.subject,
            userID: identity.userID, sealedToken: sealed, createdAt: now, nextAttemptAt: now.addingTimeInterval(firstCallDelay.inSeconds))
    }

    /// How a provider answered a revocation.
    public enum Result: String, Sendable {
        /// Revoked (Apple answers 200 also for a token that was already invalid).
        case revoked
        /// The provider said the token is no longer valid (`invalid_grant`, `invalid_token`):
        /// nothing is left to revoke.
        case alreadyInvalid = "already_invalid"
        /// Not called: the identity still holds the token (the removal it was queued ahead of
        /// was refused or never landed), so it is not the provider's to forget.
        case stillLinked = "still_linked"
    }

    /// How a worker's call ended, as the store records it.
    public enum Settlement: Sendable, Hashable {
        /// Revoked, or already invalid: the entry is removed.
        case finished
        /// Call again at the entry's `nextAttemptAt` (attempts and error updated).
        case retry
        /// Given up (``failedAt`` set): kept for operators, never called again.
        case failed
    }

    // MARK: stored form

    /// The entry as the store keeps it (compact JSON; `lease` is not part of it).
    public func encoded() -> [UInt8] {
        var members: [String: JSONValue] = [
            "id": .string(id), "provider": .string(provider), "subject": .string(subject), "userID": .string(userID),
            "sealedToken": .string(sealedToken), "createdAt": .integer(createdAt.unixMilliseconds),
            "attempts": .integer(Int64(attempts)), "nextAttemptAt": .integer(nextAttemptAt.unixMilliseconds)
        ]
        if let clientID { members["clientID"] = .string(clientID) }
        if let lastError { members["lastError"] = .string(lastError) }
        if let failedAt { members["failedAt"] = .integer(failedAt.unixMilliseconds) }
        return JSONValue.object(members).serialized()
    }

    /// Reads a stored entry.
    /// - Throws: ``AuthGateError/Code/storeCorrupt`` when it is not one.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> ProviderRevocation {
        let corrupt = AuthGateError(.storeCorrupt, "a stored provider revocation is not valid")
        guard let members = (try? JSONValue.parse(bytes))?.objectValue, let id = members["id"]?.stringValue,
            let provider = members["provider"]?.stringValue, let subject = members["subject"]?.stringValue,
            let userID = members["userID"]?.stringValue, let sealed = members["sealedToken"]?.stringValue,
            let created = members["createdAt"]?.integerValue, let attempts = members["attempts"]?.integerValue,
            let next = members["nextAttemptAt"]?.integerValue, (0...1_000_000).contains(attempts)
        else { throw corrupt }
        // Years 0...9999, so no later arithmetic on a date read back can overflow.
        func date(_ milliseconds: Int64) -> Date {
            Date(timeIntervalSince1970: Double(min(max(milliseconds, -62_135_596_800_000), 253_402_300_799_000)) / 1000)
        }
        return ProviderRevocation(
            id: id, provider: provider, clientID: members["clientID"]?.stringValue, subject: subject, userID: userID, sealedToken: sealed,
            createdAt: date(created), attempts: Int(attempts), nextAttemptAt: date(next), lastError: members["lastError"]?.stringValue,
            failedAt: members["failedAt"]?.integerValue.map(date))
    }
}
