/// A Sentinel's announcement that a master is changing, in the order a failover makes them:
///
/// - `+failover-state-wait-promotion`: the Sentinel leading the failover has just told the chosen
///   replica to become master (`slave <ip:port> <ip> <port> @ <master name> <old ip> <old port>`);
///   a moment later it takes writes. Not yet ``isConfirmed``.
/// - `+promoted-slave` (same fields): the leader saw the replica report itself master, up to a
///   second later (it asks every second); from then on the Sentinels name it as the master.
/// - `+switch-master` (`<master name> <old ip> <old port> <new ip> <new port>`): every Sentinel, once
///   the other replicas follow the new master.
public struct RedisMasterSwitch: Sendable, Hashable {
    /// The channels that carry announcements.
    public static let channels = ["+switch-master", "+promoted-slave", "+failover-state-wait-promotion"]

    public let masterName: String
    public let previous: RedisServerAddress
    public let current: RedisServerAddress
    /// False for a promotion under way (`+failover-state-wait-promotion`): the node may still say
    /// it is a replica for a moment, so a connection checks its `ROLE`.
    public let isConfirmed: Bool

    public init(masterName: String, previous: RedisServerAddress, current: RedisServerAddress, isConfirmed: Bool = true) {
        self.masterName = masterName
        self.previous = previous
        self.current = current
        self.isConfirmed = isConfirmed
    }

    /// Reads the payload of a `+switch-master` message; nil when it is not five fields with two
    /// ports in range.
    public init?(payload: String) {
        let fields = payload.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 5, !fields[0].isEmpty, !fields[1].isEmpty, !fields[3].isEmpty,
            let oldPort = Self.port(fields[2]), let newPort = Self.port(fields[4])
        else { return nil }
        self.init(
            masterName: String(fields[0]), previous: RedisServerAddress(host: String(fields[1]), port: oldPort),
            current: RedisServerAddress(host: String(fields[3]), port: newPort))
    }

    /// Reads a `+promoted-slave` or `+failover-state-wait-promotion` payload; nil unless it is the
    /// eight fields Sentinel writes.
    public init?(promotedReplica payload: String, isConfirmed: Bool = true) {
        let fields = payload.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 8, fields[0] == "slave", fields[4] == "@", !fields[2].isEmpty, !fields[5].isEmpty, !fields[6].isEmpty,
            let newPort = Self.port(fields[3]), let oldPort = Self.port(fields[7])
        else { return nil }
        self.init(
            masterName: String(fields[5]), previous: RedisServerAddress(host: String(fields[6]), port: oldPort),
            current: RedisServerAddress(host: String(fields[2]), port: newPort), isConfirmed: isConfirmed)
    }

    /// Reads a pushed Pub/Sub message `["message", channel, payload]` from one of ``channels``.
    public init?(message: RESPValue) {
        guard let fields = message.array, fields.count == 3, fields[0].string == "message", let payload = fields[2].string else { return nil }
        switch fields[1].string {
        case "+switch-master": self.init(payload: payload)
        case "+promoted-slave": self.init(promotedReplica: payload)
        case "+failover-state-wait-promotion": self.init(promotedReplica: payload, isConfirmed: false)
        default: return nil
        }
    }

    private static func port(_ text: Substring) -> Int? {
        DecimalInteger.parse(text, in: 1...65535)
    }
}
