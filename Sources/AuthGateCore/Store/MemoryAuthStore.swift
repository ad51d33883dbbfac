/// The in-process store: everything lives in this process and is lost when it stops.
///
/// For development (`make run`) and tests. It cannot be shared by replicas, so production
/// configurations use ``RedisAuthStore``.
public actor MemoryAuthStore: AuthStore {
    public nonisolated let kind = "memory"

    public init() {}

    public nonisolated func checkReadiness() async throws {}
}
