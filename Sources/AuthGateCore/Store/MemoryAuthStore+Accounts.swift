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
}
