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
        guard let store = AuthStoreFactory.make(configuration.store, logger: logger).store as? RedisAuthStore else {
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
    static func run<T>(_ options: ConfigurationOptions, _ body: (AdminStore) async throws -> T) async throws -> T {
        let opened = try await open(options)
        do {
            let result = try await body(opened)
            await opened.redisStore.redis.shutdown()
            return result
        } catch {
            await opened.redisStore.redis.shutdown()
            throw error
        }
    }
}
