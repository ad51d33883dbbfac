/// What a session records of the device that started it: the `User-Agent` and the client's IP
/// (`X-Forwarded-For` believed only from `server.trusted_proxies`), for the user's own device list.
public struct SessionDevice: Sendable, Hashable {
    public var userAgent: String?
    public var ip: String?

    /// Nothing known (sessions made by tests and tools).
    public static let unknown = SessionDevice(userAgent: nil, ip: nil)

    /// The longest user agent kept; longer ones are cut.
    static let maximumUserAgentLength = 512

    /// `userAgent` kept as printable ASCII (anything else becomes `?`), cut to 512 characters;
    /// empty is nil.
    public init(userAgent: String?, ip: String?) {
        if let userAgent, !userAgent.isEmpty {
            let printable = userAgent.utf8.prefix(Self.maximumUserAgentLength).map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }
            self.userAgent = String(decoding: printable, as: UTF8.self)
        } else {
            self.userAgent = nil
        }
        self.ip = ip.flatMap { $0.isEmpty ? nil : $0 }
    }
}
