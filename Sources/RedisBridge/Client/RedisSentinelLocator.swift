import Logging
import NIOCore

/// Finds the master through the Sentinels and connects to it.
///
/// The address the client last heard from a Sentinel (``RedisMasterTracker``) is tried first;
/// then each Sentinel in turn is asked (`SENTINEL get-master-addr-by-name`) and the node it names
/// is tried, until one that says it is the master (`ROLE`) answers. A Sentinel that has not yet
/// heard of a failover (they learn from each other every two seconds) therefore costs one refused
/// attempt, not a backoff.
enum RedisSentinelLocator {
    static func connectToMaster(
        _ sentinel: RedisSentinelConfiguration, configuration: RedisClientConfiguration, eventLoop: any EventLoop, logger: Logger,
        preferred: RedisServerAddress?
    ) async throws -> RedisConnection {
        var failures: [String] = []
        var tried: Set<RedisServerAddress> = []
        if let preferred {
            tried.insert(preferred)
            do {
                return try await connect(master: preferred, sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger)
            } catch let error as RedisError {
                failures.append(error.message)
            }
        }
        for node in sentinel.nodes {
            let address: RedisServerAddress
            do {
                address = try await master(
                    named: sentinel.masterName, by: node, sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger)
            } catch let error as RedisError {
                failures.append("Sentinel \(node): \(error.message)")
                continue
            }
            guard tried.insert(address).inserted else { continue }
            do {
                return try await connect(master: address, sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger)
            } catch let error as RedisError {
                failures.append(error.message)
            }
        }
        throw RedisError(.connectionFailed, "no reachable master \(sentinel.masterName): \(failures.joined(separator: "; "))")
    }

    /// What one Sentinel names as the master.
    static func master(
        named masterName: String, by node: RedisSentinelConfiguration.Node, _ sentinel: RedisSentinelConfiguration,
        configuration: RedisClientConfiguration, eventLoop: any EventLoop, logger: Logger
    ) async throws -> RedisServerAddress {
        let connection = try await connect(sentinel: node, sentinel, configuration: configuration, eventLoop: eventLoop, logger: logger)
        defer { connection.closeNow() }
        let reply = try await connection.send(RedisCommand("SENTINEL", "get-master-addr-by-name", .string(masterName)))
        guard let address = masterAddress(in: reply) else { throw RedisError(.connectionFailed, "does not know \(masterName)") }
        return address
    }

    /// The master a `SENTINEL get-master-addr-by-name` reply names: a host and a port of 1-65535
    /// in digits; nil for anything else. (The port goes to `getaddrinfo` as text, which reads
    /// `70000` as port 4464: a number out of range is refused here, not wrapped there.)
    static func masterAddress(in reply: RESPValue) -> RedisServerAddress? {
        guard let fields = reply.array, fields.count == 2, let host = fields[0].string, !host.isEmpty,
            let port = fields[1].string.flatMap({ DecimalInteger.parse($0, in: 1...65535) })
        else { return nil }
        return RedisServerAddress(host: host, port: port)
    }

    /// A connection to one Sentinel: its own user and password, no database, no client name; TLS
    /// when the URL is `rediss://`.
    static func connect(
        sentinel node: RedisSentinelConfiguration.Node, _ sentinel: RedisSentinelConfiguration, configuration: RedisClientConfiguration,
        eventLoop: any EventLoop, logger: Logger
    ) async throws -> RedisConnection {
        var url = RedisURL(host: node.host, port: node.port, tls: configuration.url.tls)
        url.username = sentinel.username
        url.password = sentinel.password
        var sentinelConfiguration = configuration
        sentinelConfiguration.clientName = nil
        sentinelConfiguration.sentinel = nil
        return try await RedisConnection.connect(to: url, configuration: sentinelConfiguration, eventLoop: eventLoop, logger: logger)
    }

    /// A connection to `address` with the URL's credentials and database, kept only if the node
    /// says it is a master (a Sentinel may name a demoted master for a moment after a failover).
    private static func connect(
        master address: RedisServerAddress, _ sentinel: RedisSentinelConfiguration, configuration: RedisClientConfiguration,
        eventLoop: any EventLoop, logger: Logger
    ) async throws -> RedisConnection {
        var url = configuration.url
        (url.host, url.port) = (address.host, address.port)
        let connection = try await RedisConnection.connect(to: url, configuration: configuration, eventLoop: eventLoop, logger: logger)
        let role = try? await connection.send(RedisCommand("ROLE"), timeout: configuration.connectTimeout)
        guard role?.array?.first?.string == "master" else {
            connection.closeNow()
            throw RedisError(.connectionFailed, "\(address), named master of \(sentinel.masterName), is not a master")
        }
        return connection
    }
}
