public import Logging
import RedisBridge
public import ServiceLifecycle

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Works the provider token revocation outbox (a `Service` on every replica): claims what is due
/// (each entry leased to one replica at a time), calls the provider, and settles each entry:
/// removed when revoked or already invalid (or when its identity still holds the token: the
/// removal it was queued ahead of did not land); due again with exponential backoff while the provider
/// (or the store) is unreachable, answers 5xx or refuses our credentials; given up (kept for `authgate
/// revocations`) on a permanent refusal or after ``maximumAttempts`` calls. Every outcome is
/// logged (never the token) and counted in `authgate_provider_revocations_total`.
public struct ProviderRevocationWorker: Service {
    private let store: any AuthStore
    private let revoker: ProviderTokenRevoker
    private let logger: Logger
    private let pollInterval: Duration
    /// The outbox is polled every second: while the store is down, one line per 10 s says so.
    private let outageLog = RepeatedLogThrottle(interval: .seconds(10))
    /// How long a claimed entry is this replica's; longer than one provider call may take.
    static let lease = Duration.seconds(60)
    /// Entries claimed per pass.
    static let batchSize = 16
    /// Calls made before an entry is given up (the backoff spreads them over more than two days).
    public static let maximumAttempts = 20

    public init(store: any AuthStore, revoker: ProviderTokenRevoker, logger: Logger, pollInterval: Duration = .seconds(1)) {
        self.store = store
        self.revoker = revoker
        self.logger = logger
        self.pollInterval = pollInterval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var settled = Self.batchSize
                while settled == Self.batchSize, !Task.isCancelled { settled = await workOnce(now: Date()) }
                try? await Task.sleep(for: pollInterval)
            }
        }
    }

    /// The pause before call number `attempts + 1`: 5 s doubling, at most six hours.
    public static func backoff(afterAttempts attempts: Int) -> Duration {
        let exponent = min(max(attempts - 1, 0), 13)
        return min(.seconds(5 * (1 << exponent)), .seconds(6 * 3600))
    }

    /// One pass: claims up to ``batchSize`` due entries and settles each.
    /// - Returns: how many entries were claimed (0 when the store cannot be reached).
    @discardableResult
    public func workOnce(now: Date) async -> Int {
        let claimed: [ProviderRevocation]
        do {
            claimed = try await store.claimProviderRevocations(now: now, lease: Self.lease, limit: Self.batchSize)
        } catch {
            if let repeated = outageLog.admit("outbox") {
                logger.warning("provider revocation outbox unavailable", metadata: ["gw.error": "\(error)", "gw.repeated": "\(repeated)"])
            }
            return 0
        }
        for entry in claimed { await work(entry, now: now) }
        return claimed.count
    }

    /// Whether the entry's identity still holds its token (then it is not revoked).
    private func stillLinked(_ entry: ProviderRevocation) async throws -> Bool {
        try await store.identities(ofUser: entry.userID).contains {
            $0.key == IdentityKey(provider: entry.provider, subject: entry.subject) && $0.sealedRefreshToken == entry.sealedToken
        }
    }

    private func work(_ entry: ProviderRevocation, now: Date) async {
        var entry = entry
        entry.attempts += 1
        let settlement: ProviderRevocation.Settlement
        let outcome: String
        var metadata: Logger.Metadata = [
            "gw.provider": "\(entry.provider)", "gw.user_id": "\(entry.userID)", "gw.revocation_id": "\(entry.id)",
            "gw.attempts": "\(entry.attempts)"
        ]
        do {
            let result = try await stillLinked(entry) ? .stillLinked : try await revoker.revoke(entry)
            settlement = .finished
            outcome = result.rawValue
            logger.notice("provider token revoked", metadata: metadata.merging(["gw.outcome": "\(outcome)"]) { $1 })
        } catch {
            let reason = (error as? AuthGateError) ?? AuthGateError(.providerUnavailable, "\(type(of: error))")
            entry.lastError = reason.description
            metadata["gw.error"] = "\(reason)"
            let retryable = [.providerUnavailable, .providerCredentialsRejected, .storeUnavailable].contains(reason.code)
            if retryable, entry.attempts < Self.maximumAttempts {
                settlement = .retry
                outcome = "retry"
                entry.nextAttemptAt = now.addingTimeInterval(Self.backoff(afterAttempts: entry.attempts).inSeconds)
                metadata["gw.retry_at"] = "\(entry.nextAttemptAt)"
                logger.warning("provider token revocation failed; will retry", metadata: metadata)
            } else {
                settlement = .failed
                outcome = "failed"
                entry.failedAt = now
                logger.error("provider token revocation given up; see `authgate revocations list`", metadata: metadata)
            }
        }
        if settlement != .retry {
            store.recordAudit(
                .now(
                    settlement == .failed ? "provider_revocation_failed" : "provider_token_revoked", userID: entry.userID, actor: "system",
                    detail: ["provider": entry.provider, "outcome": outcome, "revocation_id": entry.id]))
        }
        GatewayMetrics.providerRevocation(
            provider: entry.provider == "apple" || entry.provider == "google" ? entry.provider : "other", outcome: outcome)
        do {
            if try await !store.settleProviderRevocation(entry, as: settlement) {
                logger.notice("provider revocation lease lost; another replica has the entry", metadata: metadata)
            }
        } catch {
            // The lease runs out and the entry is claimed again: a revocation is safe to repeat.
            logger.warning("provider revocation could not be settled", metadata: metadata.merging(["gw.store_error": "\(error)"]) { $1 })
        }
    }
}
