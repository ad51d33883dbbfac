import NIOHTTP2
import Testing

@testable import AuthGateHTTP

/// The order in which stream events reach NIO's connection manager, without channels.
@Suite("HTTP/2 stream events in order")
struct HTTP2OrderedStreamDelegateTests {
    private typealias Order = HTTP2OrderedStreamDelegate.Order

    @Test("created then closed: both passed on")
    func usual() {
        var order = Order()
        let step1 = order.created(1)
        #expect(step1)
        let step2 = order.created(3)
        #expect(step2)
        let step3 = order.closed(3)
        #expect(step3)
        let step4 = order.closed(1)
        #expect(step4)
        #expect(order.waitingForCreation == 0)
    }

    @Test("closed before created (NIO's order for a stream reset while its first frame was read): neither passed on, nothing kept")
    func closedFirst() {
        var order = Order()
        let step5 = order.closed(5)
        #expect(!step5)
        #expect(order.waitingForCreation == 1)
        let step6 = order.created(5)
        #expect(!step6)
        #expect(order.waitingForCreation == 0)
        // Later streams are unaffected.
        let step7 = order.created(7)
        #expect(step7)
        let step8 = order.closed(7)
        #expect(step8)
    }

    @Test("a stream closed twice is passed on once")
    func closedTwice() {
        var order = Order()
        let step9 = order.created(9)
        #expect(step9)
        let step10 = order.closed(9)
        #expect(step10)
        let step11 = order.closed(9)
        #expect(!step11)
        let step12 = order.created(9)
        #expect(!step12, "the second close is taken for a stream not yet created")
        #expect(order.waitingForCreation == 0)
    }
}
