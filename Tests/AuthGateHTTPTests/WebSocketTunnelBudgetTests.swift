import Testing

@testable import AuthGateHTTP

@Suite("WebSocket tunnel budget")
struct WebSocketTunnelBudgetTests {
    @Test("places up to the limit, none beyond; a place given back is taken again")
    func limit() {
        let budget = WebSocketTunnelBudget(limit: 3)
        #expect((0..<3).allSatisfy { _ in budget.take() })
        #expect(!budget.take())
        #expect(budget.inUse == 3)
        budget.giveBack()
        #expect(budget.take())
        #expect(!budget.take())
    }

    @Test("taken from many threads at once, never more than the limit")
    func concurrent() async {
        let budget = WebSocketTunnelBudget(limit: 5)
        let taken = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var held = 0
                    for _ in 0..<2_000 where budget.take() {
                        held += 1
                        #expect(budget.inUse <= 5)
                    }
                    return held
                }
            }
            return await group.reduce(0, +)
        }
        #expect(taken == 5)
        #expect(budget.inUse == 5)
    }
}
