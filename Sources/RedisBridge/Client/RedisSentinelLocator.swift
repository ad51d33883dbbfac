import Logging
import NIOCore

/// Asks Sentinels where the master is (`SENTINEL get-master-addr-by-name`), in order, until one
/// answers. Asked again for every new connection, so a client follows a failover as soon as its
/// connections to the old master break (or the old master says it is no longer one).
enum RedisSentinelLocator {
    static func master(
        _ sentinel: RedisSentinelConfiguration, configuration: RedisClientConfiguration, eventLoop: any EventLoop, logger: Logger
    ) async throws -> (host: String, port: Int) {
        var failures: [String] = []
        for node in sentinel.nodes {
            var url = RedisURL(host: node.host, port: node.port, tls: configuration.url.tls)
            url.password = sentinel.password
            var sentinelConfiguration = configuration
            sentinelConfiguration.clientName = nil
            sentinelConfiguration.sentinel = nil
            do {
                let connection = try await RedisConnection.connect(
                    to: url, configuration: sentinelConfiguration, eventLoop: eventLoop, logger: logger)
                defer { connection.closeNow() }
                let reply = try await connection.send(RedisCommand("SENTINEL", "get-master-addr-by-name", .string(sentinel.masterName)))
                guard let fields = reply.array, fields.count == 2, let host = fields[0].string, let port = fields[1].string.flatMap(Int.init) else {
                    failures.append("\(node): does not know \(sentinel.masterName)")
                    continue
                }
                return (host, port)
            } catch let error as RedisError {
                failures.append("\(node): \(error.message)")
            }
        }
        throw RedisError(.connectionFailed, "no Sentinel named the master \(sentinel.masterName): \(failures.joined(separator: "; "))")
    }
}
