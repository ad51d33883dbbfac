import AuthGateCore
import Crypto
import Foundation
import FuzzSupport

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzIDToken_main")
public func fuzzIDTokenMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzIDToken(data, size) }
}

/// Compact JWS parsing and the ID-token checks, against one fixed ES256 key set and a pinned clock.
///
/// The first byte picks how the rest becomes a token:
/// - 0: the rest is the token text as a client would send it;
/// - 1: header JSON, claims JSON, raw nonce and the provider access token sent with it
///   (NUL-separated), signed here with the published key;
/// - 2: as 1, then one signature byte changed;
/// - 3: as 1, but signed with a key that is not published.
/// Properties: never a trap; never an acceptance without a signature that verifies (checked with
/// swift-crypto directly); an accepted token's claims satisfy every rule (issuer, audience,
/// expiry with leeway, `nbf`/`iat` within the skew, a subject, the nonce, and `at_hash`: a string
/// or `null` if present, and with an access token sent, the left half of its SHA-256).
public func fuzzIDToken(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let mode = input.byte() % 4
    let token: String
    var rawNonce: String?
    var accessToken: String?
    if mode == 0 {
        token = String(decoding: input.rest(), as: UTF8.self)
    } else {
        let header = input.field()
        let claims = input.field()
        let nonce = input.text()
        rawNonce = nonce.isEmpty ? nil : nonce
        let access = input.text()
        accessToken = access.isEmpty ? nil : access
        let signed = FuzzProvider.sign(header: header, payload: claims, with: mode == 3 ? FuzzProvider.strangerKey : FuzzProvider.privateKey)
        if mode == 2 {
            var parts = signed.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            var signature = Base64URL.decode(parts[2]) ?? []
            if !signature.isEmpty {
                let index = Int(input.byte()) % signature.count
                signature[index] ^= 0x01
            }
            parts[2] = Base64URL.encode(signature)
            token = parts.joined(separator: ".")
        } else {
            token = signed
        }
    }
    let nonce = rawNonce
    let access = accessToken
    let outcome = runBlocking { () -> Result<VerifiedIdentity, any Error> in
        do {
            return .success(try await IDTokenTarget.verifier.verify(idToken: token, rawNonce: nonce, accessToken: access, now: FuzzProvider.now))
        } catch {
            return .failure(error)
        }
    }
    guard case .success(let identity) = outcome else { return 0 }
    fuzzCheck(mode == 0 || mode == 1, "a token with a changed signature or an unpublished key was accepted: \(token)")
    fuzzCheck(FuzzProvider.hasValidSignature(token), "accepted without a valid signature: \(token)")
    IDTokenTarget.checkClaims(of: token, rawNonce: nonce, accessToken: access, identity: identity)
    return 0
}

/// The verifier under test and an independent reading of the rules it must have applied.
enum IDTokenTarget {
    static let leeway: Double = 30
    static let skew: Double = 60

    static let verifier: any IdentityVerifier = {
        do {
            let configuration = try AuthGateConfiguration.parse(
                yaml: """
                    providers:
                      oidc:
                        - name: fuzz
                          issuer: "\(FuzzProvider.issuer)"
                          audiences: ["\(FuzzProvider.audience)"]
                          jwks_file: "\(FuzzProvider.keySetFile)"
                          algorithm: ES256
                          leeway: 30s
                          clock_skew: 60s
                    """,
                baseDirectory: "",
                environment: [:]
            )
            guard let provider = configuration.providers.oidc.first else { fatalError("the fuzz provider did not configure") }
            return IdentityVerifierRegistry.makeVerifier(provider, keySet: FuzzProvider.keySet(provider: "fuzz"))
        } catch {
            fatalError("the fuzz configuration does not parse: \(error)")
        }
    }()

    /// Re-reads the accepted token's claims and checks each rule without the gateway's code paths.
    static func checkClaims(of token: String, rawNonce: String?, accessToken: String?, identity: VerifiedIdentity) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]), let claims = (try? JSONValue.parse(payload))?.objectValue else {
            fuzzCheck(false, "accepted a token whose payload is not a base64url JSON object: \(token)")
            return
        }
        let now = FuzzProvider.now.timeIntervalSince1970
        fuzzCheck(claims["iss"]?.stringValue == FuzzProvider.issuer, "accepted another issuer: \(claims["iss"].map { "\($0)" } ?? "none")")
        let audiences: [String]
        switch claims["aud"] {
        case .string(let audience): audiences = [audience]
        case .array(let values): audiences = values.compactMap(\.stringValue)
        default: audiences = []
        }
        fuzzCheck(audiences.contains(FuzzProvider.audience), "accepted audiences \(audiences)")
        guard let expiry = claims["exp"]?.integerValue else {
            fuzzCheck(false, "accepted a token without an integer exp")
            return
        }
        fuzzCheck(Double(expiry) + leeway > now, "accepted an expired token: exp \(expiry)")
        if let notBefore = claims["nbf"] {
            fuzzCheck(notBefore.integerValue.map { Double($0) <= now + skew } ?? false, "accepted nbf \(notBefore)")
        }
        if let issuedAt = claims["iat"] {
            fuzzCheck(issuedAt.integerValue.map { Double($0) <= now + skew } ?? false, "accepted iat \(issuedAt)")
        }
        let subject = claims["sub"]?.stringValue ?? ""
        fuzzCheck(
            !subject.isEmpty && identity.subject == subject, "accepted subject \(subject.debugDescription) as \(identity.subject.debugDescription)")
        let claimedNonce = claims["nonce"]?.stringValue ?? ""
        let presented = rawNonce ?? ""
        fuzzCheck(claimedNonce.isEmpty == presented.isEmpty, "accepted a nonce present on one side only")
        if !presented.isEmpty {
            fuzzCheck(NonceRule.hashed(presented) == claimedNonce, "accepted a nonce that does not hash to the claim")
        }
        switch claims["at_hash"] {
        case nil, .null?: break
        case .string(let atHash)?:
            if let accessToken, !accessToken.isEmpty, !atHash.isEmpty {
                // The left half of the SHA-256 (the key is ES256), in unpadded base64url, by Foundation.
                let half = Data(SHA256.hash(data: Array(accessToken.utf8)).prefix(16))
                let expected = half.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
                fuzzCheck(atHash == expected, "accepted at_hash \(atHash.debugDescription) for an access token whose hash is \(expected)")
            }
        case let other?:
            fuzzCheck(false, "accepted an at_hash that is not a string: \(other)")
        }
    }
}
