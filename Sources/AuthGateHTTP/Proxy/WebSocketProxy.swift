#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import AuthGateCore
public import HTTPTypes
public import HummingbirdWebSocket
import HummingbirdWSClient
public import Logging
public import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Proxies WebSocket upgrades on proxy routes.
///
/// The upgrade request is authenticated like any proxied request. A refused one is not upgraded
/// and is logged with its reason; Hummingbird's upgrade handler then answers it 400 with
/// `Connection: close` (browsers cannot read a failed handshake's status anyway). Once upgraded, the
/// connection to an upstream is opened with the same identity headers, and data frames are relayed
/// both ways as they come. While it is open, the caller's session is checked against the
/// revocation view every ``recheckInterval``: when the session is revoked, the user signed out
/// everywhere or banned, or the token expires, both sides are closed, the client's with 1008
/// (policy violation).
///
/// Only a connection's first request can be upgraded (Hummingbird's upgrade handler leaves the
/// pipeline after it), as browsers do. Subprotocols are offered to the upstream but not negotiated
/// back to the client: the client's upgrade is answered before the upstream is reached.
public struct WebSocketProxy: Sendable {
    /// How often an open connection's session is checked again.
    public static let recheckInterval = Duration.milliseconds(250)
    /// Close code 1014 (RFC 6455 registry: bad gateway), sent when the upstream cannot be reached.
    static let badGateway = WebSocketErrorCode(codeNumber: 1014)

    private let proxy: EdgeProxy

    public init(proxy: EdgeProxy) {
        self.proxy = proxy
    }

    /// Whether `headers` ask for a WebSocket upgrade.
    static func isWebSocketUpgrade(_ headers: HTTPFields) -> Bool {
        headers[values: .upgrade].contains { $0.split(separator: ",").contains { $0.trimmingOWS.lowercased() == "websocket" } }
    }

    /// Decides an upgrade request: upgraded when it is a WebSocket request on a proxy route that
    /// its token satisfies.
    public func shouldUpgrade(_ head: HTTPRequest, channel: any Channel, logger: Logger) async -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let target = head.path ?? "/"
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard Self.isWebSocketUpgrade(head.headerFields),
            let route = proxy.route(host: head.authority, path: String(path[0]), method: head.method.rawValue)
        else { return .dontUpgrade }
        let bearer = head.headerFields[.authorization].flatMap(RequestSupport.bearerToken(authorization:))
        let claims: AccessTokenClaims?
        do {
            claims = try await proxy.authorize(bearer: bearer, route: route.configuration, logger: logger)
        } catch {
            return .dontUpgrade
        }
        guard let (_, upstream) = proxy.pools[route.index].next() else { return .dontUpgrade }
        let requestID = RequestLogMiddleware.acceptableRequestID(head.headerFields[RequestLogMiddleware.requestIDHeader]) ?? RequestLogMiddleware.newRequestID()
        var logger = logger
        logger[metadataKey: "gw.request_id"] = .string(requestID)
        logger[metadataKey: "gw.route"] = .string(route.configuration.name)
        let headers = proxy.upstreamHeaders(
            head.headerFields, claims: claims, route: route.configuration, peer: channel.remoteAddress, authority: head.authority, requestID: requestID
        )
        let url = EdgeProxy.url(
            upstream, route: route.configuration, path: String(path[0]), query: path.count > 1 ? String(path[1]) : nil,
            scheme: upstream.scheme == "https" ? "wss" : "ws"
        )
        let relay = Relay(proxy: proxy, url: url, headers: Self.handshakeHeaders(headers), claims: claims, logger: logger)
        var response = HTTPFields()
        response[RequestLogMiddleware.requestIDHeader] = requestID
        return .upgrade(response) { inbound, outbound, _ in await relay.run(client: inbound, outbound) }
    }

    /// The upstream handshake's extra headers: the proxied headers without the client's own
    /// handshake fields (the upstream connection makes its own key and version).
    static func handshakeHeaders(_ headers: HTTPHeaders) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            let lower = name.lowercased()
            if lower.hasPrefix("sec-websocket-"), lower != "sec-websocket-protocol" { continue }
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        return fields
    }

    /// One proxied WebSocket connection.
    struct Relay: Sendable {
        let proxy: EdgeProxy
        let url: String
        let headers: HTTPFields
        let claims: AccessTokenClaims?
        let logger: Logger

        /// Why the relay stopped.
        enum End: Sendable {
            case clientClosed
            case upstreamClosed
            case sessionEnded(reason: String)
        }

        func run(client inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter) async {
            let configuration = WebSocketClientConfiguration(maxFrameSize: proxy.configuration.proxy.maxWebSocketFrame, additionalHeaders: headers)
            do {
                let upstreamClose = try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { upstreamInbound, upstreamOutbound, _ in
                    let end = await relayFrames(client: (inbound, outbound), upstream: (upstreamInbound, upstreamOutbound))
                    if case .sessionEnded(let reason) = end {
                        logger.info("websocket closed", metadata: ["gw.outcome": "session_ended", "gw.reason": "\(reason)"])
                        try? await outbound.close(.policyViolation, reason: reason)
                        try? await upstreamOutbound.close(.goingAway, reason: "client session ended")
                    }
                }
                if let upstreamClose {
                    try? await outbound.close(upstreamClose.closeCode, reason: upstreamClose.reason)
                }
            } catch {
                logger.warning("websocket upstream failed", metadata: ["gw.error": "\(type(of: error))"])
                try? await outbound.close(WebSocketProxy.badGateway, reason: "upstream unavailable")
            }
        }

        private func relayFrames(
            client: (WebSocketInboundStream, WebSocketOutboundWriter), upstream: (WebSocketInboundStream, WebSocketOutboundWriter)
        ) async -> End {
            await withTaskGroup(of: End.self) { group in
                group.addTask {
                    await Self.copy(from: client.0, to: upstream.1)
                    return .clientClosed
                }
                group.addTask {
                    await Self.copy(from: upstream.0, to: client.1)
                    return .upstreamClosed
                }
                if let claims {
                    group.addTask { await watch(claims) }
                }
                let end = await group.next() ?? .clientClosed
                group.cancelAll()
                return end
            }
        }

        /// Copies data frames as they come, until the source closes or the task is cancelled.
        private static func copy(from source: WebSocketInboundStream, to destination: WebSocketOutboundWriter) async {
            do {
                for try await frame in source {
                    let opcode: WebSocketOpcode = switch frame.opcode {
                    case .text: .text
                    case .binary: .binary
                    case .continuation: .continuation
                    }
                    try await destination.write(.custom(WebSocketFrame(fin: frame.fin, opcode: opcode, data: frame.data)))
                }
            } catch {}
        }

        /// Returns when the caller's session ends: revoked, signed out, banned, expired, or its
        /// revocation state unavailable (fail closed); or when cancelled.
        private func watch(_ claims: AccessTokenClaims) async -> End {
            while !Task.isCancelled {
                switch await proxy.authenticator.recheck(claims, now: Date()) {
                case .allow: break
                case .unauthorized(let reason), .forbidden(let reason), .unavailable(let reason): return .sessionEnded(reason: reason)
                }
                try? await Task.sleep(for: WebSocketProxy.recheckInterval)
            }
            return .clientClosed
        }
    }
}
