import NIOCore
import RedisBridge

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension RedisAuthStore {
    public func user(id: String) async throws -> UserRecord? {
        guard case .bulkString(let buffer) = try await run(RedisCommand("GET", .string(keys.user(id)))) else { return nil }
        return try decodedUsers.record(id, buffer, decode: { try StoredRecordCoding.decodeUser($0) })
    }

    public func identities(ofUser userID: String) async throws -> [IdentityRecord] {
        try identities(from: try await run(RedisCommand("HVALS", .string(keys.identities(userID)))), userID: userID)
    }

    public func owner(ofIdentity provider: String, subject: String) async throws -> String? {
        try await run(RedisCommand("GET", .string(keys.identityIndex(provider, subject)))).string
    }

    public func owner(ofEmail email: String) async throws -> String? {
        try await run(RedisCommand("GET", .string(keys.emailIndex(email)))).string
    }

    public func account(userID: String, sessionID: String?) async throws -> AccountSnapshot? {
        let reply = try await run(
            RedisAccountScripts.account, keys: [keys.user(userID), keys.identities(userID)],
            arguments: [.string(keyPrefix), .string(userID), .string(sessionID ?? "")]
        )
        return try account(from: reply, userID: userID, sessionID: sessionID)
    }

    public func signInLookup(provider: String, subject: String, email: String?, taking marks: SingleUseMarks?) async throws -> SignInLookup {
        var lookupKeys = [keys.identityIndex(provider, subject)]
        lookupKeys.reserveCapacity(4)
        var arguments: [RedisArgument] = [.string(keyPrefix), "0", "", "0"]
        if let email {
            lookupKeys.append(keys.emailIndex(email))
            arguments[1] = "1"
        }
        if let replay = marks?.replay {
            lookupKeys.append(keys.expiring(replay.key))
            arguments[2] = .integer(replay.expiresAt.unixMilliseconds(rounded: .up))
        }
        if let serverNonce = marks?.serverNonce {
            lookupKeys.append(keys.expiring(serverNonce))
            arguments[3] = "1"
        }
        let reply = try await run(RedisAccountScripts.signInLookup, keys: lookupKeys, arguments: arguments)
        let fields = reply.array ?? []
        if let marks, fields.count == 1 {
            if marks.replay != nil, fields[0].string == "replayed" { throw marks.error(.replayed) }
            if marks.serverNonce != nil, fields[0].string == "nonce_unknown" { throw marks.error(.serverNonceUnknown) }
        }
        switch fields.first?.string {
        case "identity" where fields.count == 3:
            let owner = fields[1].string
            return SignInLookup(identityOwner: owner, emailHolder: nil, account: try account(from: fields[2], userID: owner ?? "", sessionID: nil))
        case "email" where fields.count == 3:
            let holder = fields[1].string
            return SignInLookup(identityOwner: nil, emailHolder: holder, account: try account(from: fields[2], userID: holder ?? "", sessionID: nil))
        case "none":
            return SignInLookup(identityOwner: nil, emailHolder: nil, account: nil)
        default:
            throw AuthGateError(.storeCorrupt, "the sign-in lookup script answered \(reply)")
        }
    }

    public func commit(_ change: AccountChange) async throws -> AccountChangeOutcome {
        let user = change.user
        // Appended one by one into room reserved once: `+= [...]` made an array per group.
        var arguments: [RedisArgument] = []
        arguments.reserveCapacity(
            17 + 2 * change.claimedIdentities.count + 3 * change.savedIdentities.count + 2 * change.removedIdentities.count)
        /// A tagged pair: a word the script reads, then its value.
        func pair(_ tag: RedisArgument, _ value: RedisArgument) {
            arguments.append(tag)
            arguments.append(value)
        }
        pair(.string(keyPrefix), .string(user.id))
        if let base = change.base {
            pair("1", .byteArray(base.bytes))
        } else {
            pair("0", "")
        }
        let userBytes = StoredRecordCoding.encode(user)
        arguments.append(.byteArray(userBytes))
        arguments.append(.integer(Self.milliseconds(user.createdAt)))
        arguments.append(.string(change.fence ?? ""))
        for key in change.claimedIdentities { pair("claim", .string(key.field)) }
        if let email = change.claimedEmail { pair("email", .string(email)) }
        var identityBytes: [UInt8] = []
        for identity in change.savedIdentities {
            identityBytes = StoredRecordCoding.encode(identity)
            arguments.append("save")
            arguments.append(.string(identity.key.field))
            arguments.append(.byteArray(identityBytes))
        }
        var sessionBytes: [UInt8] = []
        if let session = change.newSession {
            sessionBytes = StoredRecordCoding.encode(session.record)
            arguments.append("session")
            arguments.append(.string(session.record.id))
            arguments.append(.byteArray(sessionBytes))
            arguments.append(.string(session.refreshTokenHash))
            arguments.append(.integer(Self.milliseconds(session.record.createdAt)))
            arguments.append(.integer(Int64(max(0, change.sessionLimit))))
        }
        for key in change.removedIdentities { pair("drop", .string(key.field)) }
        if let email = change.releasedEmail { pair("release", .string(email)) }
        if change.endsAllSessions { arguments.append("endall") }

        let reply = try await runAcknowledged(
            RedisAccountScripts.commit, keys: [keys.user(user.id), keys.identities(user.id), keys.users, keys.fence(user.id)],
            arguments: arguments
        )
        let fields = reply.array ?? []
        switch fields.first?.string {
        case "ok":
            // What was just written is what the next read of this account returns: kept decoded.
            decodedUsers.seed(user.id, bytes: userBytes, record: StoredRecordCoding.asRead(user))
            if change.savedIdentities.count == 1, let identity = change.savedIdentities.first {
                // A user with one identity reads it first; otherwise the bytes at that place differ
                // and the read decodes what it finds.
                decodedIdentities.seed(
                    IdentitySlot(userID: user.id, position: 0), bytes: identityBytes, record: StoredRecordCoding.asRead(identity))
            }
            if let session = change.newSession {
                decodedSessions.seed(session.record.id, bytes: sessionBytes, record: StoredRecordCoding.asRead(session.record))
            }
            return .committed(endedSessions: fields.dropFirst().compactMap(\.string))
        case "stale": return .stale
        case "fenced": return .fenced
        case "identity_taken" where fields.count == 2: return .identityTaken(owner: fields[1].string ?? "")
        case "email_taken" where fields.count == 2: return .emailTaken(holder: fields[1].string ?? "")
        default: throw AuthGateError(.storeCorrupt, "the account change script answered \(reply)")
        }
    }

    public func fenceAccount(userID: String, token: String, lifetime: Duration) async throws -> Bool {
        let reply = try await run(
            RedisCommand("SET", .string(keys.fence(userID)), .string(token), "PX", .integer(max(1, Self.milliseconds(lifetime))), "NX"))
        return !reply.isNull
    }

    public func updateIdentity(_ identity: IdentityRecord) async throws -> Bool {
        let reply = try await runAcknowledged(
            RedisAccountScripts.updateIdentity, keys: [keys.identities(identity.userID)],
            arguments: [
                .string(keyPrefix), .string(identity.key.field),
                .byteArray(StoredRecordCoding.encode(identity))
            ]
        )
        return reply.int == 1
    }

    public func listUsers(offset: Int, limit: Int) async throws -> (users: [UserRecord], total: Int) {
        let total = Int(try await run(RedisCommand("ZCARD", .string(keys.users))).int ?? 0)
        guard limit > 0, offset < total else { return ([], total) }
        let ids =
            try await run(RedisCommand("ZRANGE", .string(keys.users), .integer(Int64(offset)), .integer(Int64(offset + limit - 1)))).array?
            .compactMap(\.string) ?? []
        var users: [UserRecord] = []
        for id in ids {
            if let user = try await user(id: id) { users.append(user) }
        }
        return (users, total)
    }

    public func deleteIdentity(provider: String, subject: String, userID: String) async throws {
        // The reply counts the identities removed; an identity already gone is not an error.
        _ = try await runAcknowledged(
            RedisAccountScripts.deleteIdentity, keys: [keys.identities(userID), keys.identityIndex(provider, subject)],
            arguments: [.string(keyPrefix), .string(userID), .string(IdentityKey(provider: provider, subject: subject).field)]
        )
    }

    public func deleteUser(_ userID: String) async throws -> [String] {
        let reply = try await runAcknowledged(
            RedisAccountScripts.deleteUser, keys: [keys.user(userID), keys.identities(userID), keys.sessions(userID), keys.users],
            arguments: [.string(keyPrefix), .string(userID)]
        )
        return reply.array?.compactMap(\.string) ?? []
    }

    // MARK: replies

    /// An account from the scripts' `{user, identities, session record, refreshed ms}` reply
    /// (nil reply: no such user) for the user `userID` (and the session `sessionID`, when asked).
    func account(from reply: RESPValue, userID: String, sessionID: String?) throws -> AccountSnapshot? {
        if reply.isNull { return nil }
        guard let fields = reply.array, fields.count == 4, case .bulkString(let userBytes) = fields[0] else {
            throw AuthGateError(.storeCorrupt, "an account reply has the wrong shape")
        }
        let (user, stored) = try decodedUsers.recordAndBytes(userID, userBytes, decode: { try StoredRecordCoding.decodeUser($0) })
        return AccountSnapshot(
            user: user, stamp: RecordStamp(stored), identities: try identities(from: fields[1], userID: userID),
            session: try session(record: fields[2], refreshed: fields[3], sessionID: sessionID ?? "")
        )
    }

    /// The identity records of `userID` from an `HVALS` reply, oldest first.
    func identities(from reply: RESPValue, userID: String) throws -> [IdentityRecord] {
        let values = reply.array ?? []
        var identities: [IdentityRecord] = []
        identities.reserveCapacity(values.count)
        for (position, value) in values.enumerated() {
            guard case .bulkString(let buffer) = value else { continue }
            identities.append(
                try decodedIdentities.record(
                    IdentitySlot(userID: userID, position: position), buffer, decode: { try StoredRecordCoding.decodeIdentity($0) }))
        }
        // In place: `sorted` made another array of copies (every string of every record retained).
        if !AccountSnapshot.isOldestFirst(identities) { identities.sort { $0.createdAt < $1.createdAt } }
        return identities
    }
}
