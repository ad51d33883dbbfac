import Crypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An opaque refresh token: base64url of a version byte, the user's and the session's UUIDs
/// (so the store finds the session's hash slot without a global index) and 32 random bytes.
/// The store keeps only its SHA-256.
public struct RefreshToken: Sendable, Hashable {
    /// The token as the client holds it.
    public let value: String
    public let userID: String
    public let sessionID: String

    /// A fresh token for a session.
    public static func generate(userID: String, sessionID: String) -> RefreshToken? {
        guard let user = UUIDBytes.bytes(of: userID), let session = UUIDBytes.bytes(of: sessionID) else { return nil }
        let secret = Base64URL.randomBytes(32)
        return RefreshToken(value: Base64URL.encode([1] + user + session + secret), userID: userID, sessionID: sessionID)
    }

    /// Reads a token presented by a client; nil when it is not one of ours.
    public init?(parsing value: String) {
        guard value.utf8.count == 87, let bytes = Base64URL.decode(value), bytes.count == 65, bytes[0] == 1 else { return nil }
        self.value = value
        self.userID = UUIDBytes.string(of: Array(bytes[1..<17]))
        self.sessionID = UUIDBytes.string(of: Array(bytes[17..<33]))
    }

    private init(value: String, userID: String, sessionID: String) {
        self.value = value
        self.userID = userID
        self.sessionID = sessionID
    }

    /// Lower-case hex SHA-256 of the token: all the store ever keeps.
    public var hash: String { NonceRule.hashed(value) }

    /// Seals `child` so that only the holder of this token (its parent) can open it: AES-GCM
    /// under a key derived from this token. The store keeps the sealed child so that a parent
    /// presented again within the reuse interval gets the current child back.
    func seal(_ child: RefreshToken) throws -> String {
        let box = try AES.GCM.seal(Array(child.value.utf8), using: sealingKey)
        guard let combined = box.combined else { throw AuthGateError(.storeCorrupt, "AES-GCM gave no combined box") }
        return Base64URL.encode(Array(combined))
    }

    /// Opens a child sealed by ``seal(_:)``; nil when this token is not its parent.
    func open(_ sealed: String) -> RefreshToken? {
        guard let bytes = Base64URL.decode(sealed), let box = try? AES.GCM.SealedBox(combined: bytes),
            let plain = try? AES.GCM.open(box, using: sealingKey)
        else { return nil }
        return RefreshToken(parsing: String(decoding: plain, as: UTF8.self))
    }

    private var sealingKey: SymmetricKey {
        SymmetricKey(data: SHA256.hash(data: Array("authgate refresh reuse v1\u{0}".utf8) + Array(value.utf8)))
    }
}

/// UUID text <-> 16 bytes, without Foundation's UUID parsing rules leaking upper case. Text is
/// read strictly: 36 bytes, dashes at 8, 13, 18 and 23, hex digits (either case) elsewhere.
enum UUIDBytes {
    /// The 16 bytes `text` spells; nil when it is not a UUID in the form above.
    static func bytes(of text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { utf8 -> [UInt8]? in
            guard utf8.count == 36 else { return nil }
            var bytes = [UInt8](repeating: 0, count: 16)
            var index = 0
            for byteIndex in 0..<16 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard utf8[index] == UInt8(ascii: "-") else { return nil }
                    index += 1
                }
                guard let high = Base64URL.hexValue(utf8[index]), let low = Base64URL.hexValue(utf8[index + 1]) else { return nil }
                bytes[byteIndex] = high << 4 | low
                index += 2
            }
            return bytes
        }
    }

    /// The lower-case text of `bytes` (16 of them), dashed as a UUID.
    static func string(of bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2 + 4) { output in
            var written = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    output[written] = UInt8(ascii: "-")
                    written += 1
                }
                output[written] = Base64URL.hexDigits[Int(byte >> 4)]
                output[written + 1] = Base64URL.hexDigits[Int(byte & 15)]
                written += 2
            }
            return written
        }
    }

    /// The lower-case form of a UUID, or nil when `text` is not one.
    static func canonical(_ text: String) -> String? {
        bytes(of: text).map(string(of:))
    }

    /// A new random (version 4) UUID in lower case.
    static func random() -> String {
        var bytes = Base64URL.randomBytes(16)
        bytes[6] = bytes[6] & 0x0f | 0x40
        bytes[8] = bytes[8] & 0x3f | 0x80
        return string(of: bytes)
    }
}
