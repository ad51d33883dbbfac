import RedisBridge
import Yams

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads typed values out of the parsed YAML, applying `AUTHGATE_…` environment overrides and
/// collecting every problem (with the key and the offending value) instead of stopping at the first.
final class ConfigurationReader {
    private(set) var issues: [ConfigurationError.Issue] = []
    /// Overrides by variable name.
    let environment: [String: String]
    /// The environment variables that were applied, for the effective-configuration printout.
    private(set) var appliedOverrides: Set<String> = []

    /// The directory of the configuration file: relative paths in it are resolved from there.
    let baseDirectory: String

    init(environment: [String: String], baseDirectory: String) {
        self.environment = environment
        self.baseDirectory = baseDirectory
    }

    func report(_ path: ConfigurationPath, _ message: String) {
        issues.append(.init(key: path.description, message: message))
    }

    /// The environment override for `path`, if one is set.
    func override(for path: ConfigurationPath) -> String? {
        guard let name = path.environmentName, let value = environment[name] else { return nil }
        appliedOverrides.insert(name)
        return value
    }

    /// The top-level section.
    func root(_ node: Node?) -> ConfigurationSection {
        ConfigurationSection(path: .root, node: node, reader: self)
    }
}

/// A mapping in the configuration, with typed getters. Each getter checks the environment first,
/// then the YAML, then falls back to the default; each reports a problem it finds and returns the
/// default, so reading goes on and every problem is listed.
final class ConfigurationSection {
    let path: ConfigurationPath
    private let entries: [(key: String, value: Node)]
    private let reader: ConfigurationReader
    private var consumed: Set<String> = []

    init(path: ConfigurationPath, node: Node?, reader: ConfigurationReader) {
        self.path = path
        self.reader = reader
        var entries: [(key: String, value: Node)] = []
        switch node {
        case .mapping(let mapping):
            for (key, value) in mapping {
                guard let name = key.scalar?.string else {
                    reader.report(path, "keys must be plain strings")
                    continue
                }
                entries.append((name, value))
            }
        case .none:
            break
        case .scalar(let scalar) where Self.isNull(scalar):
            break
        case .some(let other):
            reader.report(path, "expected a mapping of keys to values, got a \(Self.kind(of: other))")
        }
        self.entries = entries
    }

    /// True when the YAML or the environment sets `key`.
    func contains(_ key: String) -> Bool {
        if let name = path.appending(key).environmentName, reader.environment[name] != nil { return true }
        return node(key) != nil
    }

    /// True when an environment variable overrides `key`.
    func isOverridden(_ key: String) -> Bool {
        guard let name = path.appending(key).environmentName else { return false }
        return reader.environment[name] != nil
    }

    /// The value of `key` from the environment only (for secrets, which the file may not hold).
    func environmentValue(_ key: String) -> String? {
        consumed.insert(key)
        return reader.override(for: path.appending(key))
    }

    /// The directory relative file paths are resolved against.
    var baseDirectory: String { reader.baseDirectory }

    /// True when the YAML file itself (not the environment) sets `key`.
    func fileContains(_ key: String) -> Bool { node(key) != nil }

    func report(_ key: String, _ message: String) {
        reader.report(path.appending(key), message)
    }

    // MARK: scalars

    /// The text of a scalar, from the environment or the YAML; nil when absent or null.
    func rawString(_ key: String) -> String? {
        consumed.insert(key)
        if let value = reader.override(for: path.appending(key)) { return value }
        guard let node = node(key) else { return nil }
        guard case .scalar(let scalar) = node else {
            report(key, "expected a single value, got a \(Self.kind(of: node))")
            return nil
        }
        return Self.isNull(scalar) ? nil : scalar.string
    }

    /// A file path (resolved against the configuration's directory) that must be readable;
    /// `required` reports its absence with that reason ("required with server.tls").
    func readableFile(_ key: String, required: String? = nil) -> String? {
        guard let path = optionalString(key) else {
            if let required { report(key, required) }
            return nil
        }
        let resolved = SecretReader.resolve(path, against: baseDirectory)
        if !FileManager.default.isReadableFile(atPath: resolved) { report(key, "cannot read \"\(resolved)\"") }
        return resolved
    }

    func string(_ key: String, default defaultValue: String) -> String {
        rawString(key) ?? defaultValue
    }

    func optionalString(_ key: String) -> String? {
        rawString(key)
    }

    func bool(_ key: String, default defaultValue: Bool) -> Bool {
        guard let text = rawString(key) else { return defaultValue }
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default:
            report(key, "expected true or false, got \"\(text)\"")
            return defaultValue
        }
    }

    func int(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) -> Int {
        guard let text = rawString(key) else { return defaultValue }
        guard let value = DecimalInteger.parse(text.trimmed, in: range) else {
            report(key, "expected a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
            return defaultValue
        }
        return value
    }

    func duration(_ key: String, default defaultValue: Duration, minimum: Duration = .zero, maximum: Duration? = nil) -> Duration {
        guard let text = rawString(key) else { return defaultValue }
        guard let value = ConfigurationValueParsers.duration(text) else {
            report(key, "\"\(text)\" is not a duration; use a number with a unit, like 3600s, 10m, 1h or 250ms")
            return defaultValue
        }
        if value < minimum {
            report(key, "\"\(text)\" is too short; the minimum is \(ConfigurationValueParsers.format(minimum))")
            return defaultValue
        }
        if let maximum, value > maximum {
            report(key, "\"\(text)\" is too long; the maximum is \(ConfigurationValueParsers.format(maximum))")
            return defaultValue
        }
        return value
    }

    func byteSize(_ key: String, default defaultValue: Int, range: ClosedRange<Int>? = nil) -> Int {
        guard let text = rawString(key) else { return defaultValue }
        guard let value = ConfigurationValueParsers.byteSize(text), value > 0 else {
            report(key, "\"\(text)\" is not a size; use bytes or a unit, like 1048576, 512KiB, 1MiB or 10MB")
            return defaultValue
        }
        if let range, !range.contains(value) {
            let (low, high) = (ConfigurationValueParsers.format(bytes: range.lowerBound), ConfigurationValueParsers.format(bytes: range.upperBound))
            report(key, "\"\(text)\" is out of range; use a size from \(low) to \(high)")
            return defaultValue
        }
        return value
    }

    /// A rate such as `150/5m`; `off` disables it (nil).
    func rate(_ key: String, default defaultValue: RateLimit?) -> RateLimit? {
        guard let text = rawString(key) else { return defaultValue }
        if ["off", "none", "disabled"].contains(text.lowercased()) { return nil }
        guard let rate = ConfigurationValueParsers.rate(text) else {
            report(key, "\"\(text)\" is not a rate; use count/window, like 150/5m or 30/1h, or off")
            return defaultValue
        }
        return rate
    }

    func choice<Value: RawRepresentable & CaseIterable>(_ key: String, default defaultValue: Value) -> Value where Value.RawValue == String {
        guard let text = rawString(key) else { return defaultValue }
        guard let value = Value(rawValue: text.trimmed) ?? Value(rawValue: text.trimmed.lowercased()) else {
            report(key, "\"\(text)\" is not one of \(Value.allCases.map(\.rawValue).joined(separator: ", "))")
            return defaultValue
        }
        return value
    }

    // MARK: collections

    /// A list of strings: a YAML sequence, or from the environment a comma-separated list or a
    /// YAML flow sequence (`[a, b]`).
    func stringList(_ key: String, default defaultValue: [String] = []) -> [String] {
        consumed.insert(key)
        let keyPath = path.appending(key)
        if let text = reader.override(for: keyPath) {
            if text.trimmed.hasPrefix("["), let node = parseYAML(text, at: keyPath) {
                return strings(in: node, at: keyPath) ?? defaultValue
            }
            return text.split(separator: ",").map(\.trimmed).filter { !$0.isEmpty }
        }
        guard let node = node(key) else { return defaultValue }
        if case .scalar(let scalar) = node, Self.isNull(scalar) { return defaultValue }
        return strings(in: node, at: keyPath) ?? defaultValue
    }

    /// A mapping of string keys to string values (`require_claims`), in file order.
    func stringMap(_ key: String) -> [(key: String, value: String)] {
        let section = section(key)
        var pairs: [(key: String, value: String)] = []
        for name in section.keys {
            if let value = section.rawString(name) { pairs.append((name, value)) }
        }
        return pairs
    }

    /// The nested mapping under `key` (empty when absent). From the environment, a YAML text.
    func section(_ key: String) -> ConfigurationSection {
        consumed.insert(key)
        let keyPath = path.appending(key)
        if let name = keyPath.environmentName, let text = reader.environment[name], let node = parseYAML(text, at: keyPath),
            case .mapping = node
        {
            _ = reader.override(for: keyPath)
            return ConfigurationSection(path: keyPath, node: node, reader: reader)
        }
        return ConfigurationSection(path: keyPath, node: node(key), reader: reader)
    }

    /// A list of mappings (`routes`, `providers.oidc`). From the environment, a YAML text.
    func sections(_ key: String) -> [ConfigurationSection] {
        consumed.insert(key)
        let keyPath = path.appending(key)
        var listNode = node(key)
        if let text = reader.override(for: keyPath) { listNode = parseYAML(text, at: keyPath) }
        switch listNode {
        case .none:
            return []
        case .scalar(let scalar) where Self.isNull(scalar):
            return []
        case .sequence(let sequence):
            return sequence.enumerated().map { index, item in
                ConfigurationSection(path: keyPath.appending(index: index), node: item, reader: reader)
            }
        case .some(let other):
            reader.report(keyPath, "expected a list, got a \(Self.kind(of: other))")
            return []
        }
    }

    /// The keys present in the YAML, in order.
    var keys: [String] { entries.map(\.key) }

    /// Reports every key that no getter asked for: usually a typo.
    func finish() {
        for (key, _) in entries where !consumed.contains(key) {
            report(key, "unknown key (check the spelling; see the configuration reference in docs/configuration.md)")
        }
    }

    // MARK: helpers

    private func node(_ key: String) -> Node? {
        entries.first { $0.key == key }?.value
    }

    private func strings(in node: Node, at keyPath: ConfigurationPath) -> [String]? {
        switch node {
        case .scalar(let scalar):
            return [scalar.string]
        case .sequence(let sequence):
            var values: [String] = []
            for (index, item) in sequence.enumerated() {
                guard case .scalar(let scalar) = item else {
                    reader.report(keyPath.appending(index: index), "expected a single value")
                    continue
                }
                values.append(scalar.string)
            }
            return values
        default:
            reader.report(keyPath, "expected a list of values")
            return nil
        }
    }

    private func parseYAML(_ text: String, at keyPath: ConfigurationPath) -> Node? {
        do {
            return try Yams.compose(yaml: text)
        } catch {
            reader.report(keyPath, "the value of \(keyPath.environmentName ?? "the override") is not valid YAML")
            return nil
        }
    }

    static func isNull(_ scalar: Node.Scalar) -> Bool {
        scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    static func kind(of node: Node) -> String {
        switch node {
        case .scalar: return "single value"
        case .mapping: return "mapping"
        case .sequence: return "list"
        case .alias: return "alias"
        }
    }
}
