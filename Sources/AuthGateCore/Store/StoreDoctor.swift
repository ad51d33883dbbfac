import NIOCore
import RedisBridge

/// `authgate doctor`: checks that every reference in the Redis store points at a record that
/// exists and points back, and with `repair` fixes what does not.
///
/// Account writes are atomic scripts, so a healthy store has nothing to report, whatever instant
/// a gateway was killed at; the doctor is for stores written by older versions, restored from
/// partial backups, or edited by hand. Every repair is a conditional script that re-checks the
/// finding on the server, so it is safe while gateways serve traffic.
public struct StoreDoctor: Sendable {
    /// One inconsistency, and whether it was repaired.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        /// A stable name for the kind of problem (`dangling_identity_index`, ...).
        public let kind: String
        /// The key concerned.
        public let key: String
        /// What is wrong, for the operator.
        public let detail: String
        /// True when `--repair` fixed it.
        public var repaired = false

        public var description: String { "\(kind) \(key): \(detail)\(repaired ? " (repaired)" : "")" }
    }

    let store: RedisAuthStore

    public init(store: RedisAuthStore) {
        self.store = store
    }

    /// Scans the store; with `repair`, fixes each finding that can be fixed without choosing
    /// between two users (an identity or email claimed by two users is reported only).
    public func examine(repair: Bool) async throws -> [Finding] {
        var findings: [Finding] = []
        let keys = store.keys
        let prefix = store.keyPrefix
        let pattern = Self.escaped(prefix)

        // Records of users that do not exist (identities or sessions left without their user), first:
        // removing them may leave index entries dangling, which the next checks find.
        for key in try await scan(pattern + "{u:*}:*") where !key.hasSuffix(":user") && !key.hasSuffix(":fence") {
            guard let userID = Self.userID(in: key, prefix: prefix), try await !exists(keys.user(userID)) else { continue }
            var finding = Finding(kind: "orphan_record", key: key, detail: "belongs to user \(userID), who does not exist")
            if repair { finding.repaired = try await deleteUnless(key, exists: keys.user(userID)) }
            findings.append(finding)
        }
        // Index entries: each must name an existing user whose record points back.
        for key in try await scan(pattern + "idn:*") {
            let field = String(key.dropFirst(prefix.count + 4))
            guard let owner = try await get(key) else { continue }
            let userExists = try await exists(keys.user(owner))
            let linked = try await hashHas(keys.identities(owner), field)
            if !userExists || !linked {
                var finding = Finding(kind: "dangling_identity_index", key: key, detail: "names user \(owner), who has no such identity")
                if repair { finding.repaired = try await deleteIfDangling(key, owner: owner, field: field) }
                findings.append(finding)
            }
        }
        for key in try await scan(pattern + "email:*") {
            let email = String(key.dropFirst(prefix.count + 6))
            guard let holder = try await get(key) else { continue }
            if try await store.user(id: holder)?.email != email {
                var finding = Finding(kind: "dangling_email_index", key: key, detail: "names user \(holder), whose email is not this one")
                if repair { finding.repaired = try await deleteEmailIfDangling(key, holder: holder, email: email) }
                findings.append(finding)
            }
        }
        for key in try await scan(pattern + "sid:*") {
            let sessionID = String(key.dropFirst(prefix.count + 4))
            guard let owner = try await get(key) else { continue }
            if try await !exists(keys.session(owner, sessionID)) {
                var finding = Finding(kind: "dangling_session_owner", key: key, detail: "names a session of \(owner) that does not exist")
                if repair { finding.repaired = try await deleteIfValue(key, owner, unless: keys.session(owner, sessionID)) }
                findings.append(finding)
            }
        }
        let listed = try await store.run(RedisCommand("ZRANGE", .string(keys.users), 0, -1)).array?.compactMap(\.string) ?? []
        for userID in listed where try await !exists(keys.user(userID)) {
            var finding = Finding(kind: "dangling_users_entry", key: keys.users, detail: "lists user \(userID), who does not exist")
            if repair { finding.repaired = try await removeListed(userID) }
            findings.append(finding)
        }

        // Records: each user is listed and findable by its identities, email and sessions.
        let listedSet = Set(listed)
        var sessionKeys: [String: [String]] = [:]
        for key in try await scan(pattern + "{u:*}:s:*") {
            guard let userID = Self.userID(in: key, prefix: prefix) else { continue }
            sessionKeys[userID, default: []].append(String(key.dropFirst(keys.session(userID, "").count)))
        }
        for userKey in try await scan(pattern + "{u:*}:user") {
            guard let userID = Self.userID(in: userKey, prefix: prefix), let user = try? await store.user(id: userID) else {
                findings.append(Finding(kind: "unreadable_user", key: userKey, detail: "the record does not decode"))
                continue
            }
            if !listedSet.contains(userID) {
                var finding = Finding(kind: "unlisted_user", key: keys.users, detail: "user \(userID) is not listed")
                if repair { finding.repaired = try await list(user) }
                findings.append(finding)
            }
            for identity in try await store.identities(ofUser: userID) {
                let indexKey = keys.identityIndex(identity.provider, identity.subject)
                let owner = try await get(indexKey)
                guard owner != userID else { continue }
                var finding = Finding(
                    kind: owner == nil ? "missing_identity_index" : "identity_claimed_twice", key: indexKey,
                    detail: owner == nil ? "user \(userID)'s identity cannot be found" : "held by \(owner ?? ""), also linked to \(userID)")
                if repair, owner == nil { finding.repaired = try await setIfAbsent(indexKey, userID) }
                findings.append(finding)
            }
            if let email = user.email, user.deletedAt == nil {
                let indexKey = keys.emailIndex(email)
                let holder = try await get(indexKey)
                if holder != userID {
                    var finding = Finding(
                        kind: holder == nil ? "missing_email_index" : "email_claimed_twice", key: indexKey,
                        detail: holder == nil ? "user \(userID)'s email cannot be found" : "held by \(holder ?? ""), also the email of \(userID)")
                    if repair, holder == nil { finding.repaired = try await setIfAbsent(indexKey, userID) }
                    findings.append(finding)
                }
            }
            findings += try await examineSessions(of: userID, stored: sessionKeys[userID] ?? [], repair: repair)
        }

        return findings
    }

    private func examineSessions(of userID: String, stored: [String], repair: Bool) async throws -> [Finding] {
        let keys = store.keys
        var findings: [Finding] = []
        let indexed = try await store.run(RedisCommand("ZRANGE", .string(keys.sessions(userID)), 0, -1)).array?.compactMap(\.string) ?? []
        for sessionID in indexed where try await !exists(keys.session(userID, sessionID)) {
            var finding = Finding(
                kind: "dangling_session_entry", key: keys.sessions(userID), detail: "lists session \(sessionID), which does not exist")
            if repair { finding.repaired = try await removeSessionEntry(userID, sessionID) }
            findings.append(finding)
        }
        for sessionID in stored {
            let key = keys.session(userID, sessionID)
            let owner = try await get(keys.sessionOwner(sessionID))
            if !indexed.contains(sessionID) || owner != userID {
                var finding = Finding(kind: "unindexed_session", key: key, detail: "session \(sessionID) of \(userID) is not in its indexes")
                if repair { finding.repaired = try await indexSession(userID, sessionID) }
                findings.append(finding)
            }
        }
        return findings
    }

    // MARK: reading

    private func scan(_ pattern: String) async throws -> [String] {
        var cursor = "0"
        var found: [String] = []
        repeat {
            let reply = try await store.run(RedisCommand("SCAN", .string(cursor), "MATCH", .string(pattern), "COUNT", 1000))
            guard let parts = reply.array, parts.count == 2, let next = parts[0].string else {
                throw AuthGateError(.storeCorrupt, "SCAN answered \(reply)")
            }
            cursor = next
            found += parts[1].array?.compactMap(\.string) ?? []
        } while cursor != "0"
        return found
    }

    private func get(_ key: String) async throws -> String? {
        try await store.run(RedisCommand("GET", .string(key))).string
    }

    private func exists(_ key: String) async throws -> Bool {
        try await store.run(RedisCommand("EXISTS", .string(key))).int == 1
    }

    private func hashHas(_ key: String, _ field: String) async throws -> Bool {
        try await store.run(RedisCommand("HEXISTS", .string(key), .string(field))).int == 1
    }

    /// The user id in a `{u:<id>}:…` key.
    static func userID(in key: String, prefix: String) -> String? {
        guard key.hasPrefix(prefix + "{u:"), let close = key.firstIndex(of: "}") else { return nil }
        let start = key.index(key.startIndex, offsetBy: prefix.count + 3)
        return start <= close ? String(key[start..<close]) : nil
    }

    /// `text` with SCAN's glob characters escaped.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            if "*?[]\\".contains(character) { result.append("\\") }
            result.append(character)
        }
        return result
    }

    // MARK: repairs (each re-checks its finding on the server)

    private func repairScript(_ source: String, keys: [String], arguments: [String]) async throws -> Bool {
        try await store.run(RedisScript(source), keys: keys, arguments: arguments.map { .string($0) }).int == 1
    }

    private func deleteIfDangling(_ key: String, owner: String, field: String) async throws -> Bool {
        try await repairScript(
            """
            if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
            if redis.call('EXISTS', KEYS[2]) == 1 and redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then return 0 end
            return redis.call('DEL', KEYS[1])
            """, keys: [key, store.keys.user(owner), store.keys.identities(owner)], arguments: [owner, field])
    }

    private func deleteEmailIfDangling(_ key: String, holder: String, email: String) async throws -> Bool {
        try await repairScript(
            """
            if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
            local user = redis.call('GET', KEYS[2])
            if user then
              local ok, record = pcall(cjson.decode, user)
              if ok and type(record) == 'table' and record.email == ARGV[2] then return 0 end
            end
            return redis.call('DEL', KEYS[1])
            """, keys: [key, store.keys.user(holder)], arguments: [holder, email])
    }

    private func deleteIfValue(_ key: String, _ value: String, unless record: String) async throws -> Bool {
        try await repairScript(
            """
            if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
            return redis.call('DEL', KEYS[1])
            """, keys: [key, record], arguments: [value])
    }

    private func removeListed(_ userID: String) async throws -> Bool {
        try await repairScript(
            "if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end return redis.call('ZREM', KEYS[1], ARGV[1])",
            keys: [store.keys.users, store.keys.user(userID)], arguments: [userID])
    }

    private func list(_ user: UserRecord) async throws -> Bool {
        try await repairScript(
            "if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end return redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2])",
            keys: [store.keys.users, store.keys.user(user.id)], arguments: [String(user.createdAt.unixMilliseconds), user.id])
    }

    private func setIfAbsent(_ key: String, _ userID: String) async throws -> Bool {
        try await repairScript(
            "if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 1 end return 0",
            keys: [key, store.keys.user(userID)], arguments: [userID])
    }

    private func deleteUnless(_ key: String, exists record: String) async throws -> Bool {
        try await repairScript(
            "if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end return redis.call('DEL', KEYS[1])", keys: [key, record], arguments: [])
    }

    private func removeSessionEntry(_ userID: String, _ sessionID: String) async throws -> Bool {
        try await repairScript(
            "if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end return redis.call('ZREM', KEYS[1], ARGV[1])",
            keys: [store.keys.sessions(userID), store.keys.session(userID, sessionID)], arguments: [sessionID])
    }

    private func indexSession(_ userID: String, _ sessionID: String) async throws -> Bool {
        try await repairScript(
            """
            local created = redis.call('HGET', KEYS[1], 'created_ms')
            if not created then return 0 end
            redis.call('ZADD', KEYS[2], 'NX', created, ARGV[1])
            redis.call('SET', KEYS[3], ARGV[2])
            return 1
            """, keys: [store.keys.session(userID, sessionID), store.keys.sessions(userID), store.keys.sessionOwner(sessionID)],
            arguments: [sessionID, userID])
    }
}
