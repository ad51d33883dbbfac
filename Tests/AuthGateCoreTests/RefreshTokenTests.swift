import Crypto
import Testing

@testable import AuthGateCore

/// Refresh tokens and the sealed child a rotation leaves for the reuse interval.
@Suite("Refresh tokens")
struct RefreshTokenTests {
    private static let userID = "0b5e8a5c-3f0e-4a53-9d1e-2f6b1c7a9e01"
    private static let sessionID = "7d2c4b1a-9e8f-4c3d-8b2a-1f0e9d8c7b6a"

    private func parent() throws -> RefreshToken {
        try #require(RefreshToken.generate(userID: Self.userID, sessionID: Self.sessionID))
    }

    @Test("a child keeps the user and session, has a new secret, parses, and its seal opens only under its parent")
    func childOpensUnderParent() throws {
        let parent = try parent()
        let (child, sealed) = parent.child()
        #expect(child.userID == Self.userID && child.sessionID == Self.sessionID)
        #expect(child.value != parent.value && child.value.utf8.count == 87)
        #expect(RefreshToken(parsing: child.value) == child)
        #expect(sealed.utf8.count == 66)
        #expect(parent.open(sealed) == child)
        // The parent's sibling (same session, another secret) and the child itself cannot open it.
        let sibling = try self.parent()
        #expect(sibling.open(sealed) == nil)
        #expect(child.open(sealed) == nil)
        // Each rotation draws its own secret.
        #expect(parent.child().token != child)
    }

    @Test("a child sealed by another build opens: the seal's bytes are fixed (computed apart, with Python's hashlib)")
    func sealFormatIsFixed() throws {
        // Parent secret 00 01 … 1f, child secret ff fe … e0; sealed = base64url(2 ‖ secret XOR
        // SHA-512("authgate refresh reuse v2\0" ‖ parent)[0..<32] ‖ SHA-256(that hash's [32..<64] ‖
        // ciphertext)[0..<16]). A gateway of one version must open what another sealed in a rolling upgrade.
        let parent = try #require(RefreshToken(parsing: "AQteilw_DkpTnR4vaxx6ngF9LEsano9MPYsqHw6djHtqAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"))
        let child = try #require(parent.open("AkSm-DBwiVAwGkEjm-q0berEGAnA7SuOQCBuGVn3vF_6ImnSoUQfQS8qMFiXHDLIXw"))
        #expect(child.value == "AQteilw_DkpTnR4vaxx6ngF9LEsano9MPYsqHw6djHtq__79_Pv6-fj39vX08_Lx8O_u7ezr6uno5-bl5OPi4eA")
        #expect(child.userID == Self.userID && child.sessionID == Self.sessionID)
        // What the store keeps: lower-case hex SHA-256 of the token text.
        #expect(child.hash == "485eb6c14eb6567b2c7299aed9294b7d96a7cc0a80261d6ebe15807f30deeda0")
    }

    @Test("a sealed child altered in any byte, cut short or grown does not open")
    func alteredSealDoesNotOpen() throws {
        let parent = try parent()
        let sealed = try #require(Base64URL.decode(parent.child().sealed))
        for index in sealed.indices {
            for bit in 0..<8 {
                var altered = sealed
                altered[index] ^= 1 << UInt8(bit)
                #expect(parent.open(Base64URL.encode(altered)) == nil)
            }
        }
        #expect(parent.open(Base64URL.encode(sealed.dropLast())) == nil)
        #expect(parent.open(Base64URL.encode(sealed + [0])) == nil)
        for garbage in ["", "A", "!!!!", String(repeating: "A", count: 66), String(repeating: "_", count: 1000)] {
            #expect(parent.open(garbage) == nil)
        }
    }

    @Test("a child sealed by AuthGate before 2026-11-25 (AES-GCM of the whole child) still opens under its parent")
    func earlierSealOpens() throws {
        let parent = try parent()
        let child = parent.child().token
        #expect(parent.open(try Self.sealedTheEarlierWay(child, under: parent)) == child)
        // Sealed under another token, or holding a token of another session: refused.
        let stranger = try #require(RefreshToken.generate(userID: Self.userID, sessionID: "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"))
        #expect(parent.open(try Self.sealedTheEarlierWay(child, under: stranger)) == nil)
        #expect(parent.open(try Self.sealedTheEarlierWay(stranger, under: parent)) == nil)
    }

    /// The seal of AuthGate up to 2026-11-24: AES-GCM of the child's text under SHA-256 of a
    /// label and the parent's text.
    private static func sealedTheEarlierWay(_ child: RefreshToken, under parent: RefreshToken) throws -> String {
        let key = SymmetricKey(data: SHA256.hash(data: Array("authgate refresh reuse v1\u{0}".utf8) + Array(parent.value.utf8)))
        let box = try AES.GCM.seal(Array(child.value.utf8), using: key)
        return Base64URL.encode(Array(try #require(box.combined)))
    }
}
