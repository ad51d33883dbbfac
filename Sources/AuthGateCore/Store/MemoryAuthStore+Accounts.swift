#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

extension MemoryAuthStore {
    public func user(id: String) async throws -> UserRecord? { users[id] }

    public func saveUser(_ user: UserRecord) async throws { users[user.id] = user }

    public func identities(ofUser userID: String) async throws -> [IdentityRecord] {
        (identitiesByUser[userID] ?? []).sorted { $0.createdAt < $1.createdAt }
    }

    public func saveIdentity(_ identity: IdentityRecord) async throws {
        var list = identitiesByUser[identity.userID] ?? []
        list.removeAll { $0.provider == identity.provider && $0.subject == identity.subject }
        list.append(identity)
        identitiesByUser[identity.userID] = list
    }

    public func owner(ofIdentity provider: String, subject: String) async throws -> String? {
        identityOwners["\(provider):\(subject)"]
    }

    public func claimIdentity(provider: String, subject: String, userID: String) async throws -> String {
        let key = "\(provider):\(subject)"
        if let owner = identityOwners[key] { return owner }
        identityOwners[key] = userID
        return userID
    }

    public func owner(ofEmail email: String) async throws -> String? { emailOwners[email] }

    public func claimEmail(_ email: String, userID: String) async throws -> String {
        if let owner = emailOwners[email] { return owner }
        emailOwners[email] = userID
        return userID
    }

    public func releaseEmail(_ email: String, userID: String) async throws {
        if emailOwners[email] == userID { emailOwners.removeValue(forKey: email) }
    }

    public func listUsers(offset: Int, limit: Int) async throws -> (users: [UserRecord], total: Int) {
        let ordered = users.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        return (Array(ordered.dropFirst(max(0, offset)).prefix(max(0, limit))), ordered.count)
    }

    public func deleteIdentity(provider: String, subject: String, userID: String) async throws {
        identitiesByUser[userID]?.removeAll { $0.provider == provider && $0.subject == subject }
        if identityOwners["\(provider):\(subject)"] == userID { identityOwners.removeValue(forKey: "\(provider):\(subject)") }
    }

    public func deleteUser(_ userID: String) async throws -> [String] {
        for identity in identitiesByUser[userID] ?? [] {
            try await deleteIdentity(provider: identity.provider, subject: identity.subject, userID: userID)
        }
        if let email = users[userID]?.email { try await releaseEmail(email, userID: userID) }
        let ended = Array((sessionsByUser.removeValue(forKey: userID) ?? [:]).keys).sorted()
        identitiesByUser.removeValue(forKey: userID)
        users.removeValue(forKey: userID)
        return ended
    }
}
