import AuthGateCore
import Instrumentation
import NIOHTTP1
import ServiceContextModule
import Tracing

/// Spans for a proxied request when tracing is on: one for the request (continuing the client's
/// W3C trace context) and one for the upstream call inside it, whose context the upstream
/// receives as `traceparent`.
enum ProxySpans {
    static func start(_ plan: ProxyPlan) -> (request: any Span, upstream: any Span) {
        var parent = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(plan.headers, into: &parent, using: HTTPHeadersExtractor())
        let request = InstrumentationSystem.tracer.startAnySpan(
            "\(plan.context.method.rawValue) \(plan.route.configuration.pathPrefix)", context: parent, ofKind: .server)
        request.attributes["http.request.method"] = plan.context.method.rawValue
        request.attributes["proxy.route"] = plan.route.configuration.name
        let upstream = InstrumentationSystem.tracer.startAnySpan("proxy.upstream", context: request.context, ofKind: .client)
        upstream.attributes["proxy.route"] = plan.route.configuration.name
        upstream.attributes["server.address"] = plan.upstream.host
        return (request, upstream)
    }

    /// Writes the upstream span's context into the upstream request's headers.
    static func inject(_ span: any Span, into headers: inout HTTPHeaders) {
        InstrumentationSystem.instrument.inject(span.context, into: &headers, using: HTTPHeadersInjector())
    }

    static func end(_ spans: (request: any Span, upstream: any Span), status: Int) {
        spans.upstream.end()
        spans.request.attributes["http.response.status_code"] = status
        if status >= 500 { spans.request.setStatus(.init(code: .error)) }
        spans.request.end()
    }
}

/// Writes trace context (W3C `traceparent`, `tracestate`) into an upstream request's headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}

/// Reads trace context from a request's headers.
struct HTTPHeadersExtractor: Extractor {
    func extract(key: String, from headers: HTTPHeaders) -> String? {
        headers.first(name: key)
    }
}
