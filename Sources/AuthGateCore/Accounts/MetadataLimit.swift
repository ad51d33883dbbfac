/// The size cap on metadata a caller writes (`users.max_user_metadata`, `max_app_metadata`):
/// metadata is copied into every access token and read on every request for the user, so an
/// unbounded write is a denial of service against the user and the gateway.
public enum MetadataLimit {
    /// - Throws: ``AuthGateError`` `validation_failed` when `metadata`, serialized as JSON, is
    ///   over `limit` bytes.
    public static func check(_ metadata: [String: JSONValue], limit: Int, name: String) throws {
        let size = JSONValue.object(metadata).serialized().count
        guard size <= limit else {
            throw AuthGateError(
                .validationFailed, "\(name) is \(size) bytes, over the \(limit)-byte limit",
                clientText: name == "app_metadata" ? .fixed("app_metadata is too large") : .fixed("user_metadata is too large")
            )
        }
    }
}
