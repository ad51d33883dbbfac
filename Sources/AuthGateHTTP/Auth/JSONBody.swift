import AuthGateCore
import HTTPTypes

/// A request body read as one JSON object (``RequestSupport/object(from:limit:)``), with typed
/// optional members: absent and `null` are nil, as Codable reads an optional; a member of another
/// type is 400 `bad_json` naming it.
struct JSONBody {
    let members: [String: JSONValue]

    /// The string member `name`, if present.
    func string(_ name: String) throws -> String? {
        switch members[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw mismatch(name, "a string")
        }
    }

    /// The boolean member `name`, if present.
    func bool(_ name: String) throws -> Bool? {
        switch members[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw mismatch(name, "a boolean")
        }
    }

    private func mismatch(_ name: String, _ expected: String) -> GoTrueError {
        GoTrueError(.badRequest, code: "bad_json", message: "Could not parse request body as JSON: \(name): expected \(expected)")
    }
}
