/// Where a value sits in the configuration: `server.port`, `routes[1].upstreams`.
struct ConfigurationPath: Sendable, Hashable, CustomStringConvertible {
    private enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    private var components: [Component] = []

    static let root = ConfigurationPath()

    func appending(_ key: String) -> ConfigurationPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    func appending(index: Int) -> ConfigurationPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    var description: String {
        var text = ""
        for component in components {
            switch component {
            case .key(let key): text += text.isEmpty ? key : ".\(key)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text.isEmpty ? "(root)" : text
    }

    /// The environment variable that overrides this value: `AUTHGATE_SERVER_PORT` for
    /// `server.port`. Values inside lists have none (override the whole list instead).
    var environmentName: String? {
        var parts: [String] = []
        for component in components {
            guard case .key(let key) = component else { return nil }
            parts.append(key.uppercased())
        }
        return parts.isEmpty ? nil : "AUTHGATE_" + parts.joined(separator: "_")
    }
}
