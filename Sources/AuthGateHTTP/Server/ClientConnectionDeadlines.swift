import NIOCore

/// When a client connection has waited too long, as facts and events: a value type the
/// connection's ``ClientConnectionGuard`` feeds and asks.
///
/// - A new connection must deliver its first request head within `requestHead` (slowloris).
/// - Between requests an idle connection is kept for `keepAlive`; from the first byte of the next
///   request its head must be complete within `requestHead`.
/// - While the gateway is reading a request body, the client may be silent for at most
///   `clientIdle` (only while a read is wanted: a body held back by a slow upstream does not count).
/// - While the client does not take the response (its socket stays full), at most `clientIdle`.
/// A connection whose request is complete and whose response is awaited has no client deadline:
/// the route's upstream timeouts apply.
struct ClientConnectionDeadlines {
    struct Timeouts: Sendable, Equatable {
        var requestHead: TimeAmount
        var keepAlive: TimeAmount
        var clientIdle: TimeAmount
    }

    /// Which deadline passed (the `kind` label of `authgate_client_timeouts_total`).
    enum Expiry: String, Sendable, Equatable {
        case requestHead = "request_head"
        case keepAlive = "keep_alive"
        case clientIdle = "client_idle"
    }

    enum Phase: Equatable {
        /// Waiting for the first byte of a request (`first`: the connection's first).
        case awaitingRequest(first: Bool)
        case readingHead
        case readingBody
        case awaitingResponse
        /// A WebSocket tunnel: the relay's own rules apply.
        case tunnel
    }

    let timeouts: Timeouts
    private(set) var phase: Phase
    /// Heads received whose responses have not ended.
    private(set) var openRequests = 0
    private var phaseDeadline: NIODeadline?
    private var phaseExpiry = Expiry.requestHead
    /// Set while a read is wanted during a body.
    private var readDeadline: NIODeadline?
    /// Set while the client's socket is full.
    private var sendDeadline: NIODeadline?

    init(timeouts: Timeouts, now: NIODeadline) {
        self.timeouts = timeouts
        phase = .awaitingRequest(first: true)
        phaseDeadline = now + timeouts.requestHead
    }

    /// Bytes arrived from the client.
    mutating func bytesRead(now: NIODeadline) {
        readDeadline = nil
        switch phase {
        case .awaitingRequest(let first):
            phase = .readingHead
            // The first request's head is due `requestHead` after the connection opened.
            if !first { phaseDeadline = now + timeouts.requestHead }
            phaseExpiry = .requestHead
        case .awaitingResponse where openRequests > 0:
            // A pipelined request begins.
            phase = .readingHead
            phaseDeadline = now + timeouts.requestHead
            phaseExpiry = .requestHead
        default:
            break
        }
    }

    /// The pipeline asked for more bytes.
    mutating func readRequested(now: NIODeadline) {
        if phase == .readingBody, readDeadline == nil { readDeadline = now + timeouts.clientIdle }
    }

    mutating func headReceived() {
        guard phase != .tunnel else { return }
        openRequests += 1
        phase = .readingBody
        phaseDeadline = nil
        readDeadline = nil
    }

    mutating func requestEnded() {
        guard phase == .readingBody else { return }
        phase = .awaitingResponse
        readDeadline = nil
    }

    mutating func responseEnded(now: NIODeadline) {
        guard phase != .tunnel else { return }
        openRequests = max(0, openRequests - 1)
        if openRequests == 0, phase == .awaitingResponse {
            phase = .awaitingRequest(first: false)
            phaseDeadline = now + timeouts.keepAlive
            phaseExpiry = .keepAlive
        }
    }

    mutating func writabilityChanged(isWritable: Bool, now: NIODeadline) {
        guard phase != .tunnel else { return }
        sendDeadline = isWritable ? nil : now + timeouts.clientIdle
    }

    /// The connection became a WebSocket tunnel: none of these deadlines apply any more.
    mutating func becameTunnel() {
        phase = .tunnel
        phaseDeadline = nil
        readDeadline = nil
        sendDeadline = nil
    }

    /// The deadline that has passed at `now`, if any.
    func expired(now: NIODeadline) -> Expiry? {
        if let phaseDeadline, now >= phaseDeadline { return phaseExpiry }
        if let readDeadline, now >= readDeadline { return .clientIdle }
        if let sendDeadline, now >= sendDeadline { return .clientIdle }
        return nil
    }
}
