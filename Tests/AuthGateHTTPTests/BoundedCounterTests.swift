import Testing

@testable import AuthGateHTTP

@Suite("Bounded counter (connections, WebSocket tunnels)")
struct BoundedCounterTests {
    @Test("places up to the limit, none beyond; a place given back is taken again")
    func limit() {
        let budget = BoundedCounter(limit: 3)
        #expect((0..<3).allSatisfy { _ in budget.tryTake() })
        #expect(!budget.tryTake())
        #expect(budget.count == 3)
        budget.giveBack()
        #expect(budget.tryTake())
        #expect(!budget.tryTake())
    }

    @Test("taken from many threads at once, never more than the limit")
    func concurrent() async {
        let budget = BoundedCounter(limit: 5)
        let taken = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var held = 0
                    for _ in 0..<2_000 where budget.tryTake() {
                        held += 1
                        #expect(budget.count <= 5)
                    }
                    return held
                }
            }
            return await group.reduce(0, +)
        }
        #expect(taken == 5)
        #expect(budget.count == 5)
    }
}
