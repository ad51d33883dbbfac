import NIOCore
import NIOHPACK
import NIOHTTP2

/// One host per HTTP/2 request, and an answer for every request RFC 9113 allows.
///
/// - RFC 9113 §8.3.1 calls a request malformed when its `host` field names another host than
///   `:authority`. NIO's codec then keeps `host` and drops `:authority`, so the gateway would
///   route and forward on `host` while a proxy in front of it decided on `:authority`. Such a
///   request (or one with several `host` fields) reaches the gateway with each of them as a
///   `Host` header, which it refuses with 400 (`several_hosts`), as on HTTP/1.1.
/// - `:authority` may be left out (§8.3.1: an intermediary that translates an HTTP/1.1 request
///   sends its `Host` as `host`), but NIO's codec resets any stream without it. A request with a
///   `host` gets it as `:authority`, so it is served on that host as over HTTP/1.1; one with
///   neither gets an empty `:authority`, so the gateway answers it 400 as it answers an HTTP/1.1
///   request without a host, rather than a bare `RST_STREAM`.
///
/// Sits before NIO's codec on each stream; only the request's first HEADERS is looked at.
final class HTTP2AuthorityHostCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .headers(var frame) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        if !frame.headers.contains(name: ":authority") {
            // NIO's codec needs it; with a `host` present it keeps that and drops this.
            frame.headers.add(name: ":authority", value: frame.headers.first(name: "host") ?? "")
            context.fireChannelRead(wrapInboundOut(.headers(frame)))
        } else if let authority = Self.disagreeingAuthority(frame.headers) {
            frame.headers.add(name: "host", value: authority)
            context.fireChannelRead(wrapInboundOut(.headers(frame)))
        } else {
            context.fireChannelRead(data)
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// `:authority`, when the request names exactly one `host` and it differs from it (compared
    /// without regard to ASCII case); nil otherwise. Several `host` fields are refused as they are;
    /// none is the usual form.
    static func disagreeingAuthority(_ headers: HPACKHeaders) -> String? {
        guard let authority = headers.first(name: ":authority") else { return nil }
        let hosts = headers["host"]
        guard hosts.count == 1, !hosts[0].equalsLowercaseASCII(authority.lowercasedASCII) else { return nil }
        return authority
    }
}
