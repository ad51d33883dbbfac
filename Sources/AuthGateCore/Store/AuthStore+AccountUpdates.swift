/// How account writes retry: how often, and the pause while an operator's fence holds an account.
enum AccountRetry {
    /// How many times a read-modify-write of one account is tried before giving up with
    /// ``AuthGateError/Code/storeUnavailable`` (each retry follows a change that landed meanwhile).
    static let attempts = 16

    /// How long an operator's fence holds an account at most (a crashed gateway's fence lapses).
    static let fenceLifetime = Duration.seconds(2)

    /// A short pause while an operator's fence holds an account: 1, 2, 4 ... ms, at most 256 ms
    /// (16 tries span longer than a fence lives).
    static func backOff(_ attempt: Int) async throws {
        try await Task.sleep(for: .milliseconds(1 << min(attempt, 8)))
    }

    /// Runs `attempt` until it returns true, backing off between tries, at most ``attempts`` times.
    static func retrying(_ failure: String, _ attempt: () async throws -> Bool) async throws {
        for round in 0..<attempts {
            if try await attempt() { return }
            try await backOff(round)
        }
        throw AuthGateError(.storeUnavailable, failure)
    }
}

extension AuthStore {
    /// A read-modify-write of one account: reads it (or starts from `first`, read earlier in the
    /// request), asks `makeChange` for the change, and commits it with a compare-and-set; when the
    /// account changed meanwhile, reads again and asks again, so nothing that landed in between
    /// (a ban, a deletion, another update) is overwritten. `makeChange` sees every fresh read and
    /// may throw (the user is now banned, say) to stop. A refused claim ends it with the error
    /// `onConflict` makes of it.
    ///
    /// With `fenced` (bans and deletions), the account is fenced first, so other writers (a
    /// client flooding `PUT /user`) wait and the change cannot be starved; `makeChange` must not
    /// throw then (the fence would hold the account until it lapses).
    /// - Returns: the committed change, the account it was computed from and the sessions it
    ///   ended; nil when the user does not exist (any more).
    func updateAccount(
        userID: String, sessionID: String? = nil, startingFrom first: AccountSnapshot? = nil, fenced: Bool = false,
        _ makeChange: (AccountSnapshot) throws -> AccountChange,
        onConflict: (AccountChangeOutcome) -> AuthGateError = { _ in
            AuthGateError(.storeCorrupt, "an account update without claims was refused for a claim")
        }
    ) async throws -> (change: AccountChange, account: AccountSnapshot, endedSessions: [String])? {
        var fence: String?
        if fenced {
            let token = UUIDBytes.random()
            try await AccountRetry.retrying("another operator's fence held the account") {
                try await fenceAccount(userID: userID, token: token, lifetime: AccountRetry.fenceLifetime)
            }
            fence = token
        }
        var known = first
        for attempt in 0..<AccountRetry.attempts {
            let account: AccountSnapshot
            if let known {
                account = known
            } else {
                guard let read = try await self.account(userID: userID, sessionID: sessionID) else { return nil }
                account = read
            }
            known = nil
            var change = try makeChange(account)
            change.fence = fence
            let outcome = try await commit(change)
            switch outcome {
            case .committed(let ended): return (change, account, ended)
            case .stale: continue
            case .fenced: try await AccountRetry.backOff(attempt)
            case .identityTaken, .emailTaken: throw onConflict(outcome)
            }
        }
        throw AuthGateError(.storeUnavailable, "the account changed \(AccountRetry.attempts) times while it was being updated")
    }
}
