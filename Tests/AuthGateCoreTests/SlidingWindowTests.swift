import AuthGateTestSupport
import Foundation
import Testing

@testable import AuthGateCore

/// Rate limits counted over a sliding window: the arithmetic as a value, then the limiter on both
/// stores with a pinned clock.
@Suite("Sliding-window rate limits")
struct SlidingWindowTests {
    /// A window of `seconds` whose fixed windows start at multiples of it: the instant `offset`
    /// milliseconds into window number `index`.
    private func instant(window seconds: Int64, index: Int64, offset milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(index * seconds * 1000 + milliseconds) / 1000)
    }

    @Test("the window before counts by the share of it the sliding window still covers, rounded against the client")
    func weights() {
        let limit = RateLimit(count: 3, window: .seconds(60))
        let start = SlidingWindow(limit: limit, now: instant(window: 60, index: 29_000_000, offset: 0))
        #expect(start.previousWeight == 1_000_000 && start.elapsedMilliseconds == 0)
        let third = SlidingWindow(limit: limit, now: instant(window: 60, index: 29_000_000, offset: 20_000))
        #expect(third.previousWeight == 666_667)
        // 3 × 2/3 + 1 = 3 is the budget exactly; rounded up, the weight still refuses it at 20 s.
        #expect(!third.admits(current: 0, previous: 3))
        let later = SlidingWindow(limit: limit, now: instant(window: 60, index: 29_000_000, offset: 20_001))
        #expect(later.admits(current: 0, previous: 3))
        #expect(later.admits(current: 0, previous: 0) && later.admits(current: 2, previous: 0) && !later.admits(current: 3, previous: 0))
        // Counts a corrupted store could hold do not trap.
        #expect(!later.admits(current: .max, previous: .max) && !later.admits(current: .min, previous: .max))
        #expect(later.retryAfterSeconds(SlidingWindow.Counts(isAdmitted: false, current: .max, previous: .max)) <= 120)
        // Nor does a budget or a window far past what the configuration accepts.
        for window in [Duration.seconds(Int64.max / 2), .seconds(-5), .zero] {
            let huge = SlidingWindow(limit: RateLimit(count: .max, window: window), now: Date())
            #expect(huge.admits(current: 5, previous: 5))
            #expect(huge.retryAfterSeconds(SlidingWindow.Counts(isAdmitted: false, current: .max, previous: .max)) >= 1)
            #expect(huge.retryAfterSeconds(SlidingWindow.Counts(isAdmitted: false, current: 1_000_000_000, previous: 7)) >= 1)
        }
    }

    @Test("Retry-After is when the next request would be admitted, in this window or the next")
    func retryAfter() {
        let limit = RateLimit(count: 3, window: .seconds(60))
        // Three in the window before, none in this one, 1 ms in: admitted from 20 s on.
        let early = SlidingWindow(limit: limit, now: instant(window: 60, index: 29_000_000, offset: 1))
        #expect(early.retryAfterSeconds(SlidingWindow.Counts(isAdmitted: false, current: 0, previous: 3)) == 20)
        // Three in this window, 10 s in: the next window, once a third of it has passed (50 + 20 s).
        let full = SlidingWindow(limit: limit, now: instant(window: 60, index: 29_000_000, offset: 10_000))
        #expect(full.retryAfterSeconds(SlidingWindow.Counts(isAdmitted: false, current: 3, previous: 0)) == 70)
        // Checked against the decision itself: at that moment the request is admitted.
        for offset in stride(from: Int64(1), to: 60_000, by: 997) {
            for previous in 1...3 {
                for current in 0..<3 {
                    let now = SlidingWindow(limit: limit, now: instant(window: 60, index: 29_000_000, offset: offset))
                    guard !now.admits(current: current, previous: previous) else { continue }
                    let wait = Int64(now.retryAfterSeconds(SlidingWindow.Counts(isAdmitted: false, current: current, previous: previous)))
                    let then = SlidingWindow(limit: limit, now: instant(window: 60, index: 29_000_000, offset: offset + wait * 1000))
                    guard then.index == now.index else { continue }
                    #expect(then.admits(current: current, previous: previous), "offset \(offset), \(current) + \(previous): \(wait) s")
                }
            }
        }
    }

    /// With one fixed window per minute, a client spent its budget in the last moment of one
    /// minute and again in the first moment of the next: twice the budget within milliseconds.
    @Test("a budget spent at the end of one window is not spent again at the start of the next", arguments: TestStoreKind.allCases)
    func noBurstAtTheBoundary(kind: TestStoreKind) async throws {
        try await withTestStore(kind) { store in
            let limiter = RateLimiter(store: store)
            let limit = RateLimit(count: 3, window: .seconds(60))
            let client = "203.0.113.\(UInt8.random(in: 1...254))-\(UUID().uuidString)"
            // Pinned near now, so that the counters' expiries lie ahead.
            let index = Int64(Date().timeIntervalSince1970) / 60 + 1
            for _ in 0..<3 {
                let decision = try await limiter.check(
                    bucket: "test", client: client, limit: limit, now: instant(window: 60, index: index, offset: 59_999))
                #expect(decision.isAllowed)
            }
            let refused = try await limiter.check(bucket: "test", client: client, limit: limit, now: instant(window: 60, index: index + 1, offset: 1))
            #expect(!refused.isAllowed, "the fourth request, 2 ms after the third, was admitted")
            #expect(refused.retryAfterSeconds == 20)
            // Refused requests are not counted: once a third of the minute has passed, one more is admitted.
            for _ in 0..<5 {
                _ = try await limiter.check(bucket: "test", client: client, limit: limit, now: instant(window: 60, index: index + 1, offset: 2))
            }
            #expect(
                try await limiter.check(bucket: "test", client: client, limit: limit, now: instant(window: 60, index: index + 1, offset: 20_001))
                    .isAllowed)
            #expect(
                !(try await limiter.check(bucket: "test", client: client, limit: limit, now: instant(window: 60, index: index + 1, offset: 20_002))
                    .isAllowed))
            // Another client has a budget of its own.
            #expect(
                try await limiter.check(bucket: "test", client: client + "-2", limit: limit, now: instant(window: 60, index: index + 1, offset: 2))
                    .isAllowed)
        }
    }
}
