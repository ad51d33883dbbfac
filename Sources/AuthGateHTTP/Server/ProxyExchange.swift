import AuthGateCore
import NIOCore
import NIOHTTP1
import Tracing

/// One request the gateway serves itself: its decision, its state machine, its upstream
/// connection and what the access line will say. Lives on the client connection's event loop.
final class ProxyExchange {
    var machine: ProxyExchangeStateMachine
    /// Nil for a request refused before anything was forwarded.
    var plan: ProxyPlan?
    var context: ProxyRequestContext
    var connection: UpstreamConnection?
    /// Small parts of the upstream's response gathered into fewer before they go to the client.
    /// Not checked for exclusive access at run time (a check per body part): the gatherer's
    /// methods call nothing that could reach this exchange, so no access to it can overlap another.
    @exclusivity(unchecked) var responseBody = BodyPartGatherer()
    /// The upstream connection will become a WebSocket tunnel if the upstream agrees.
    var isTunnelHandshake = false
    /// The status written to the client (for the access line).
    var status = 0
    var reason: String?
    let started = ContinuousClock.now
    var drainTimer: Scheduled<Void>?
    /// The request's span and its upstream call's (tracing on).
    var spans: (request: any Span, upstream: any Span)?

    init(machine: ProxyExchangeStateMachine, plan: ProxyPlan?, context: ProxyRequestContext) {
        self.machine = machine
        self.plan = plan
        self.context = context
    }

    /// Request parts can be taken now (the rest of this request's body; never the next request's).
    var acceptsRequestParts: Bool {
        if case .receiving = machine.request { return true }
        return false
    }

    /// Whether the client's next bytes are wanted: body parts that can be forwarded or discarded
    /// at once, or (the request being complete) whatever comes next, so that a client closing or
    /// pipelining is noticed.
    var wantsClientBytes: Bool {
        guard case .receiving = machine.request else { return true }
        guard machine.wantsRequestBody else { return false }
        if case .sending = machine.upstream { return connection?.isWritable ?? false }
        return true
    }
}

@available(*, unavailable)
extension ProxyExchange: Sendable {}
