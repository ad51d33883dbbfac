#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The stored form of users, identities and sessions: compact JSON written field by field and read
/// with the strict ``JSONValue`` reader, no Codable or Foundation JSON on the hot path.
///
/// Member names are the Swift property names and dates are milliseconds since 1970, which is what
/// the Codable form written before this encoder looked like: records stored by an older gateway
/// read back unchanged (a fractional millisecond is accepted on reading). Scripts read two members
/// of a user (`bannedUntil`, `deletedAt`) with `cjson`; keep those names.
enum StoredRecordCoding {
    // MARK: writing

    static func encode(_ user: UserRecord) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.string("id", user.id)
        writer.string("aud", user.aud)
        writer.string("role", user.role)
        writer.string("email", user.email)
        writer.string("phone", user.phone)
        writer.date("emailConfirmedAt", user.emailConfirmedAt)
        writer.metadata("appMetadata", user.appMetadata)
        writer.metadata("userMetadata", user.userMetadata)
        writer.bool("isAnonymous", user.isAnonymous)
        writer.date("createdAt", user.createdAt)
        writer.date("updatedAt", user.updatedAt)
        writer.date("lastSignInAt", user.lastSignInAt)
        writer.date("bannedUntil", user.bannedUntil)
        writer.date("deletedAt", user.deletedAt)
        return writer.finished()
    }

    static func encode(_ identity: IdentityRecord) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.string("identityID", identity.identityID)
        writer.string("userID", identity.userID)
        writer.string("provider", identity.provider)
        writer.string("subject", identity.subject)
        writer.metadata("identityData", identity.identityData)
        writer.string("email", identity.email)
        writer.date("createdAt", identity.createdAt)
        writer.date("updatedAt", identity.updatedAt)
        writer.date("lastSignInAt", identity.lastSignInAt)
        writer.string("sealedRefreshToken", identity.sealedRefreshToken)
        writer.string("refreshTokenClientID", identity.refreshTokenClientID)
        return writer.finished()
    }

    static func encode(_ session: SessionRecord) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.string("id", session.id)
        writer.string("userID", session.userID)
        writer.date("createdAt", session.createdAt)
        writer.date("refreshedAt", session.refreshedAt)
        writer.string("aal", session.aal)
        writer.value("amr", .array(session.amr.map(\.jsonValue)))
        writer.string("userAgent", session.userAgent)
        writer.string("ip", session.ip)
        return writer.finished()
    }

    // MARK: records as a read gives them

    /// `user` as decoding its encoding gives it back: dates at the milliseconds stored (every
    /// other member is written and read back exactly). For seeding ``StoredRecordCache``. Each
    /// date is named (no key paths: a key path is read through the runtime, ~500 instructions).
    static func asRead(_ user: UserRecord) -> UserRecord {
        var user = user
        user.createdAt = user.createdAt.atStoredMillisecond
        user.updatedAt = user.updatedAt.atStoredMillisecond
        user.emailConfirmedAt = user.emailConfirmedAt?.atStoredMillisecond
        user.lastSignInAt = user.lastSignInAt?.atStoredMillisecond
        user.bannedUntil = user.bannedUntil?.atStoredMillisecond
        user.deletedAt = user.deletedAt?.atStoredMillisecond
        return user
    }

    /// `identity` as decoding its encoding gives it back (see `asRead` of a user).
    static func asRead(_ identity: IdentityRecord) -> IdentityRecord {
        var identity = identity
        identity.createdAt = identity.createdAt.atStoredMillisecond
        identity.updatedAt = identity.updatedAt.atStoredMillisecond
        identity.lastSignInAt = identity.lastSignInAt?.atStoredMillisecond
        return identity
    }

    /// `session` as decoding its encoding gives it back (see `asRead` of a user).
    static func asRead(_ session: SessionRecord) -> SessionRecord {
        var session = session
        session.createdAt = session.createdAt.atStoredMillisecond
        session.refreshedAt = session.refreshedAt.atStoredMillisecond
        return session
    }

    // MARK: reading

    static func decodeUser(_ bytes: some Collection<UInt8>) throws -> UserRecord {
        let fields = try Fields(bytes, "user")
        return UserRecord(
            id: try fields.string("id"), aud: try fields.string("aud"), role: try fields.string("role"),
            email: try fields.optionalString("email"), phone: try fields.optionalString("phone"),
            emailConfirmedAt: try fields.optionalDate("emailConfirmedAt"), appMetadata: try fields.object("appMetadata"),
            userMetadata: try fields.object("userMetadata"), isAnonymous: try fields.bool("isAnonymous"),
            createdAt: try fields.date("createdAt"), updatedAt: try fields.date("updatedAt"),
            lastSignInAt: try fields.optionalDate("lastSignInAt"), bannedUntil: try fields.optionalDate("bannedUntil"),
            deletedAt: try fields.optionalDate("deletedAt")
        )
    }

    static func decodeIdentity(_ bytes: some Collection<UInt8>) throws -> IdentityRecord {
        let fields = try Fields(bytes, "identity")
        return IdentityRecord(
            identityID: try fields.string("identityID"), userID: try fields.string("userID"), provider: try fields.string("provider"),
            subject: try fields.string("subject"), identityData: try fields.object("identityData"), email: try fields.optionalString("email"),
            createdAt: try fields.date("createdAt"), updatedAt: try fields.date("updatedAt"), lastSignInAt: try fields.optionalDate("lastSignInAt"),
            sealedRefreshToken: try fields.optionalString("sealedRefreshToken"),
            refreshTokenClientID: try fields.optionalString("refreshTokenClientID")
        )
    }

    static func decodeSession(_ bytes: some Collection<UInt8>) throws -> SessionRecord {
        let fields = try Fields(bytes, "session")
        guard let methods = fields.members["amr"]?.arrayValue else { throw fields.corrupt("amr") }
        let amr = try methods.map { method -> AccessTokenClaims.AuthenticationMethod in
            guard let name = method.objectValue?["method"]?.stringValue, let timestamp = method.objectValue?["timestamp"]?.integerValue else {
                throw fields.corrupt("amr")
            }
            return .init(method: name, timestamp: timestamp)
        }
        return SessionRecord(
            id: try fields.string("id"), userID: try fields.string("userID"), createdAt: try fields.date("createdAt"),
            refreshedAt: try fields.date("refreshedAt"), aal: try fields.string("aal"), amr: amr,
            device: SessionDevice(userAgent: try fields.optionalString("userAgent"), ip: try fields.optionalString("ip"))
        )
    }

    // MARK: parts

    /// The members of a stored object, with typed accessors that fail as ``AuthGateError/Code/storeCorrupt``.
    private struct Fields {
        let members: [String: JSONValue]
        let kind: String

        init(_ bytes: some Collection<UInt8>, _ kind: String) throws {
            self.kind = kind
            guard let members = (try? JSONValue.parse(bytes))?.objectValue else {
                throw AuthGateError(.storeCorrupt, "a stored \(kind) is not a JSON object")
            }
            self.members = members
        }

        func corrupt(_ name: String) -> AuthGateError {
            AuthGateError(.storeCorrupt, "a stored \(kind) has no valid \(name)")
        }

        func string(_ name: String) throws -> String {
            guard let value = members[name]?.stringValue else { throw corrupt(name) }
            return value
        }

        func optionalString(_ name: String) throws -> String? {
            switch members[name] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw corrupt(name)
            }
        }

        func bool(_ name: String) throws -> Bool {
            guard case .bool(let value)? = members[name] else { throw corrupt(name) }
            return value
        }

        func object(_ name: String) throws -> [String: JSONValue] {
            guard let value = members[name]?.objectValue else { throw corrupt(name) }
            return value
        }

        func date(_ name: String) throws -> Date {
            guard let value = try optionalDate(name) else { throw corrupt(name) }
            return value
        }

        /// Milliseconds since 1970, whole or (as the Codable form wrote them) fractional, within
        /// years 0...9999 so no later arithmetic on it can overflow.
        func optionalDate(_ name: String) throws -> Date? {
            let milliseconds: Double
            switch members[name] {
            case nil, .null?: return nil
            case .integer(let value)?: milliseconds = Double(value)
            case .double(let value)?: milliseconds = value
            default: throw corrupt(name)
            }
            let range = Date.unixSecondsRange
            guard (range.lowerBound * 1000...range.upperBound * 1000 + 999).contains(milliseconds) else { throw corrupt(name) }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }
    }
}

extension JSONObjectWriter {
    /// A stored record's date: milliseconds since 1970; nothing when `value` is nil (nil optionals
    /// are left out, as Codable's synthesized encoders left them out).
    fileprivate mutating func date(_ key: StaticString, _ value: Date?) {
        guard let value else { return }
        integer(key, value.unixMilliseconds)
    }
}
