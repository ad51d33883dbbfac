import ArgumentParser
import AuthGateCore
import Foundation
import Logging
import RedisBridge

/// The store the admin commands act on: the running gateways' Redis, from the same
/// configuration file. The memory store lives inside one `authgate serve` and cannot be reached
/// from another process, so admin commands refuse it.
struct AdminStore {
    let configuration: AuthGateConfiguration
    let store: any AuthStore
    let admin: AdminService
    /// The Redis store itself (for `authgate doctor`).
    let redisStore: RedisAuthStore

    /// Loads the configuration and connects, or exits 2 (configuration) or 1 (Redis unreachable).
    static func open(_ options: ConfigurationOptions) async throws -> AdminStore {
        let configuration = try options.loadOrExit()
        guard configuration.store.kind == .redis, let url = configuration.store.redis?.url else {
            printError("admin commands act on the gateways' Redis: set store.kind to redis (the memory store lives inside one authgate serve)")
            throw ExitStatus.configurationError
        }
        var logger = Logger(label: "authgate-admin")
        logger.logLevel = .critical
        guard
            let store = AuthStoreFactory.make(configuration.store, accessTokenTTL: configuration.tokens.accessTokenTTL, logger: logger).store
                as? RedisAuthStore
        else {
            throw ExitStatus.configurationError
        }
        do {
            try await store.checkReadiness()
        } catch {
            await store.redis.shutdown()
            printError("Redis unreachable at \(url): \(error)")
            throw ExitStatus.refused
        }
        var adminLogger = Logger(label: "authgate-admin")
        adminLogger.logLevel = .warning
        return AdminStore(configuration: configuration, store: store, admin: AdminService(store: store, logger: adminLogger), redisStore: store)
    }

    /// Runs `body` against the store, then disconnects.
    /// Opens the store, runs `body` as the operator (`cli:<login name>` in the audit trail), writes
    /// the audit events it recorded, and closes the store.
    static func run<T>(_ options: ConfigurationOptions, _ body: (AdminStore) async throws -> T) async throws -> T {
        let opened = try await open(options)
        let operatorName = ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "operator"
        do {
            let result = try await AuditContext.$current.withValue(AuditContext(actor: "cli:\(operatorName)")) { try await body(opened) }
            try? await opened.store.flushAudit()
            await opened.redisStore.redis.shutdown()
            return result
        } catch {
            try? await opened.store.flushAudit()
            await opened.redisStore.redis.shutdown()
            throw error
        }
    }

    /// The id of the user `reference` names (a user id in any case, `provider:subject`, or an
    /// email address), or exit 1 with "no user …": every command that acts on a user reads its
    /// argument here, so an id copied in capitals is the same user and not "no user" (or, for a
    /// listing, an empty one).
    func userID(_ reference: String) async throws -> String {
        guard let user = try await admin.findUser(reference) else { throw refusal("no user \(reference)") }
        return user.id
    }
}
