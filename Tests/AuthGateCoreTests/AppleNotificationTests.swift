import AuthGateTestSupport
import Foundation
import Logging
import Testing

@testable import AuthGateCore

/// Apple's server-to-server notifications: the three real ones in the fixtures, verified with a
/// pinned clock, and what handling one does to the store.
@Suite("Apple notifications", .timeLimit(.minutes(3)))
struct AppleNotificationTests {
    static let notifications = ProviderTokenFixtureTests.cases.filter(\.isNotification)

    private func appleVerifier(audience: String) throws -> AppleVerifier {
        let testCase = try #require(Self.notifications.first)
        return try #require(try ProviderTokenFixtureTests.verifier(for: testCase, audience: audience) as? AppleVerifier)
    }

    @Test("the three real notifications verify and decode inside their validity window")
    func realNotifications() async throws {
        #expect(Self.notifications.count == 3)
        for testCase in Self.notifications {
            let verifier = AppleNotificationVerifier(verifier: try appleVerifier(audience: testCase.audience))
            let at = Date(timeIntervalSince1970: Double(testCase.issuedAt + 1))
            let notification = try await verifier.verify(testCase.token, now: at)
            let events = try #require(try JSONValue.parse(Array((testCase.claims["events"]?.stringValue ?? "").utf8)).objectValue)
            #expect(notification.type == "consent-revoked", "\(testCase.file)")
            #expect(notification.subject == events["sub"]?.stringValue)
            #expect(notification.eventTime.timeIntervalSince1970 == Double(events["event_time"]?.integerValue ?? 0) / 1000)
            #expect(notification.id == testCase.claims["jti"]?.stringValue)
            // After expiry, for another audience, or tampered: refused.
            let late = Date(timeIntervalSince1970: Double(testCase.expiry + 3600))
            await #expect(throws: AuthGateError.self) { try await verifier.verify(testCase.token, now: late) }
            let other = AppleNotificationVerifier(verifier: try appleVerifier(audience: "com.example.other"))
            await #expect(throws: AuthGateError.self) { try await other.verify(testCase.token, now: at) }
            var parts = testCase.token.split(separator: ".").map(String.init)
            parts[1] = Base64URL.encode(Array("{\"iss\":\"https://appleid.apple.com\"}".utf8))
            await #expect(throws: AuthGateError.self) { try await verifier.verify(parts.joined(separator: "."), now: at) }
        }
    }

    @Test(
        "consent-revoked signs the Apple identity's user out everywhere, once; a replay is refused; an unknown user is acknowledged",
        arguments: TestStoreKind.allCases)
    func consentRevoked(kind: TestStoreKind) async throws {
        let testCase = try #require(Self.notifications.first)
        let at = Date(timeIntervalSince1970: Double(testCase.issuedAt + 1))
        let subject = try #require(try JSONValue.parse(Array((testCase.claims["events"]?.stringValue ?? "").utf8)).objectValue?["sub"]?.stringValue)
        try await withTestStore(kind) { store in
            let service = AppleNotificationService(
                verifier: try appleVerifier(audience: testCase.audience), store: store, logger: Logger(label: "apple-test"))
            // Nobody holds the identity yet: acknowledged, nothing to do.
            #expect(try await service.handle(testCase.token, now: at).1 == .unknownUser)
            await #expect(throws: AuthGateError.self, "a replay is refused") { try await service.handle(testCase.token, now: at) }

            let other = try #require(Self.notifications.last)
            let otherSubject = try #require(
                try JSONValue.parse(Array((other.claims["events"]?.stringValue ?? "").utf8)).objectValue?["sub"]?.stringValue)
            let userID = UUIDBytes.random()
            var change = AccountChange(
                base: nil,
                user: UserRecord(
                    id: userID, aud: "authenticated", role: "authenticated", email: nil, phone: nil, emailConfirmedAt: nil, appMetadata: [:],
                    userMetadata: [:], isAnonymous: false, createdAt: at, updatedAt: at, lastSignInAt: at, bannedUntil: nil))
            change.claimedIdentities = [IdentityKey(provider: "apple", subject: otherSubject)]
            #expect(try await store.commit(change) == .committed(endedSessions: []))
            let session = SessionRecord(id: UUIDBytes.random(), userID: userID, createdAt: at, refreshedAt: at, aal: "aal1", amr: [])
            try await store.createSession(session, refreshTokenHash: "h")
            let otherService = AppleNotificationService(
                verifier: try appleVerifier(audience: other.audience), store: store, logger: Logger(label: "apple-test"))
            let otherAt = Date(timeIntervalSince1970: Double(other.issuedAt + 1))
            #expect(try await otherService.handle(other.token, now: otherAt).1 == .signedOut)
            #expect(try await store.sessions(ofUser: userID).isEmpty)
            #expect(subject != otherSubject)
        }
    }

    @Test(
        "a notification is marked handled only once its work is done: one in progress elsewhere is refused as unavailable (Apple retries), not acknowledged",
        arguments: TestStoreKind.allCases)
    func handledOnlyWhenDone(kind: TestStoreKind) async throws {
        let testCase = try #require(Self.notifications.first)
        let at = Date(timeIntervalSince1970: Double(testCase.issuedAt + 1))
        let jti = try #require(testCase.claims["jti"]?.stringValue)
        try await withTestStore(kind) { store in
            let service = AppleNotificationService(
                verifier: try appleVerifier(audience: testCase.audience), store: store, logger: Logger(label: "apple-test"))
            // Another request holds the notification and has not finished: neither acted on nor
            // marked handled, so Apple's retry is not a replay.
            let claim = "apple-notification-claim:\(NonceRule.hashed(jti))"
            #expect(try await store.insertIfAbsent(claim, expiresAt: Date().addingTimeInterval(60)))
            await #expect(throws: AuthGateError(.storeUnavailable, "notification \(jti) is being handled by another request")) {
                try await service.handle(testCase.token, now: at)
            }
            #expect(try await !store.contains("apple-notification:\(NonceRule.hashed(jti))"), "not marked handled")
            // That request failed and let go: Apple's retry is acted on, then marked, then a replay.
            #expect(try await store.consume(claim))
            #expect(try await service.handle(testCase.token, now: at).1 == .unknownUser)
            #expect(try await store.contains("apple-notification:\(NonceRule.hashed(jti))"))
            #expect(try await !store.contains(claim), "the claim is let go after the work")
            await #expect(throws: AuthGateError.self, "a replay is refused") { try await service.handle(testCase.token, now: at) }
        }
    }
}
