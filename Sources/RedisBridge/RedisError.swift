/// The one error type RedisBridge throws.
///
/// Codes are stable strings, like jwt-kit's `JWTError.ErrorType`: callers switch on ``code`` and
/// new codes can be added without breaking them. ``message`` is for people and logs; for a server
/// error it is the text Redis sent (`WRONGTYPE …`, `NOSCRIPT …`).
public struct RedisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case connectionClosed = "connection_closed"
            case connectionFailed = "connection_failed"
            case timeout
            case serverError = "server_error"
            case protocolError = "protocol_error"
            case replyTooLarge = "reply_too_large"
            case unexpectedReply = "unexpected_reply"
            case shutdown
            case invalidConfiguration = "invalid_configuration"
            case unavailable
            case replicationTimeout = "replication_timeout"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection closed (or was closed by us) before the reply arrived.
        public static let connectionClosed = Code(.connectionClosed)
        /// No connection could be made, or the client is backing off after failed attempts.
        public static let connectionFailed = Code(.connectionFailed)
        /// The command's deadline passed; the connection was closed because RESP cannot skip a reply.
        public static let timeout = Code(.timeout)
        /// Redis answered with an error reply; ``RedisError/message`` holds its text.
        public static let serverError = Code(.serverError)
        /// The bytes from the server were not valid RESP, or a reply arrived that nobody asked for.
        public static let protocolError = Code(.protocolError)
        /// One reply grew past the configured byte cap before it completed.
        public static let replyTooLarge = Code(.replyTooLarge)
        /// The reply had a shape the caller did not expect (for example a string where an integer belongs).
        public static let unexpectedReply = Code(.unexpectedReply)
        /// The client is shutting down and takes no new commands.
        public static let shutdown = Code(.shutdown)
        /// The client configuration (URL, pool size, ...) is not usable.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// Refused at once, without trying: the last connection attempt failed and the client is
        /// waiting out its reconnect backoff (no master is known to be reachable).
        public static let unavailable = Code(.unavailable)
        /// Fewer replicas than asked acknowledged the write (`WAIT`) within the timeout, counted
        /// from the call: the write was done on the master and may be lost if it fails now, or
        /// (when the writes before it took the whole timeout) it was not sent at all.
        public static let replicationTimeout = Code(.replicationTimeout)

        /// The stable string form, for logs and metrics labels.
        public var description: String { base.rawValue }
    }

    /// The stable reason.
    public let code: Code
    /// Details for people: the server's message, the address that refused, ...
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "redis \(code): \(message)" }

    /// True when the command may not have reached Redis or its reply was lost with the connection:
    /// retrying it on a fresh connection is safe for idempotent commands.
    public var isConnectionError: Bool {
        code == .connectionClosed || code == .connectionFailed || code == .timeout || code == .unavailable
    }
}
