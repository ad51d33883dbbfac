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
    /// The user's and the session's UUIDs as the token carries them (16 bytes each): a rotation's
    /// child carries the same ones, without the ids' text parsed again.
    private let ids: [UInt8]

    /// A fresh token for a session.
    public static func generate(userID: String, sessionID: String) -> RefreshToken? {
        guard let user = UUIDBytes.bytes(of: userID), let session = UUIDBytes.bytes(of: sessionID) else { return nil }
        return RefreshToken(ids: user + session, secret: Base64URL.randomBytes(32), userID: userID, sessionID: sessionID)
    }

    /// Reads a token presented by a client; nil when it is not one of ours.
    public init?(parsing value: String) {
        guard value.utf8.count == 87, let bytes = Base64URL.decode(value), bytes.count == 65, bytes[0] == 1 else { return nil }
        self.value = value
        self.ids = Array(bytes[1..<33])
        self.userID = UUIDBytes.string(of: bytes[1..<17])
        self.sessionID = UUIDBytes.string(of: bytes[17..<33])
    }

    private init(ids: [UInt8], secret: [UInt8], userID: String, sessionID: String) {
        var token: [UInt8] = []
        token.reserveCapacity(1 + ids.count + secret.count)
        token.append(1)
        token.append(contentsOf: ids)
        token.append(contentsOf: secret)
        self.value = Base64URL.encode(token)
        self.ids = ids
        self.userID = userID
        self.sessionID = sessionID
    }

    /// Lower-case hex SHA-256 of the token: all the store ever keeps.
    public var hash: String { NonceRule.hashed(value) }

    /// This token's successor in a rotation (the same user and session, a new secret), and the
    /// successor sealed so that only the holder of this token can open it. The store keeps the
    /// sealed child so that this token presented again within the reuse interval gets the current
    /// child back (``open(_:)``).
    ///
    /// The seal is a one-time pad and a tag, both derived from this token, which has exactly one
    /// child: `pad ‖ tagKey` is SHA-512 of a label and this token (its 256 random bits are the
    /// secret), the child's 32 random bytes are XORed with `pad`, and the tag is the first 16
    /// bytes of SHA-256 of `tagKey` and that ciphertext. The child's ids are this token's, so only
    /// its secret is sealed. Sealed: base64url of `2 ‖ ciphertext ‖ tag` (49 bytes).
    func child() -> (token: RefreshToken, sealed: String) {
        let secret = Base64URL.randomBytes(32)
        let child = RefreshToken(ids: ids, secret: secret, userID: userID, sessionID: sessionID)
        let keys = sealingKeys
        var sealed: [UInt8] = []
        sealed.reserveCapacity(49)
        sealed.append(2)
        for index in 0..<32 { sealed.append(secret[index] ^ keys[index]) }
        let tag = Self.tag(key: keys[32..<64], ciphertext: sealed[1..<33])
        tag.withUnsafeBytes { sealed.append(contentsOf: $0.prefix(16)) }
        return (child, Base64URL.encode(sealed))
    }

    /// Opens a child sealed by ``child()``, or by AuthGate before 2026-11-25 (AES-GCM of the whole
    /// child under a key derived from this token: a rotation during an upgrade); nil when this
    /// token is not its parent or the sealed text was altered.
    func open(_ sealed: String) -> RefreshToken? {
        guard let bytes = Base64URL.decode(sealed) else { return nil }
        if bytes.count == 49, bytes[0] == 2 {
            let keys = sealingKeys
            let tag = Self.tag(key: keys[32..<64], ciphertext: bytes[1..<33])
            // Compared in constant time: every byte is looked at whatever the first difference.
            let difference = tag.withUnsafeBytes { tag in
                var difference: UInt8 = 0
                for index in 0..<16 { difference |= tag[index] ^ bytes[33 + index] }
                return difference
            }
            guard difference == 0 else { return nil }
            let secret = (0..<32).map { bytes[1 + $0] ^ keys[$0] }
            return RefreshToken(ids: ids, secret: secret, userID: userID, sessionID: sessionID)
        }
        let key = SymmetricKey(data: SHA256.hash(data: Array("authgate refresh reuse v1\u{0}".utf8) + Array(value.utf8)))
        guard let box = try? AES.GCM.SealedBox(combined: bytes), let plain = try? AES.GCM.open(box, using: key),
            let opened = RefreshToken(parsing: String(decoding: plain, as: UTF8.self)), opened.ids == ids
        else { return nil }
        return opened
    }

    /// `pad ‖ tagKey` (32 bytes each) for sealing this token's child.
    private var sealingKeys: [UInt8] {
        var hasher = SHA512()
        Self.sealingLabel.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        hasher.update(utf8: value)
        return Array(hasher.finalize())
    }

    private static let sealingLabel: [UInt8] = Array("authgate refresh reuse v2\u{0}".utf8)

    /// The seal's tag: its first 16 bytes are used.
    private static func tag(key: ArraySlice<UInt8>, ciphertext: ArraySlice<UInt8>) -> SHA256.Digest {
        var hasher = SHA256()
        hasher.update(data: key)
        hasher.update(data: ciphertext)
        return hasher.finalize()
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
    static func string(of bytes: some Collection<UInt8>) -> String {
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
        bytes(of: text).map { string(of: $0) }
    }

    /// A new random (version 4) UUID in lower case.
    static func random() -> String {
        var bytes = Base64URL.randomBytes(16)
        bytes[6] = bytes[6] & 0x0f | 0x40
        bytes[8] = bytes[8] & 0x3f | 0x80
        return string(of: bytes)
    }
}
