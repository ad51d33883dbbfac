import AuthGateCore
import Foundation
import FuzzSupport

/// The target's entry point (see ``runFuzzer(_:_:_:)``).
@_cdecl("FuzzAppleNotification_main")
public func fuzzAppleNotificationMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { data, size in fuzzAppleNotification(data, size) }
}

/// Apple's server-to-server notifications, decoded after their signature is checked: the first
/// field is the JWS header, the second the claims, the third the `events` document (put into the
/// claims as a string, as Apple sends it, unless the claims already carry `events`); the
/// notification is signed with the key the fuzz Apple provider trusts.
/// Properties: never a trap, whatever `events` holds; a notification that is accepted has a type,
/// a subject and an id, and an event time that is a finite date.
public func fuzzAppleNotification(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let header = input.field()
    var claims = (try? JSONValue.parse(input.field()))?.objectValue ?? [:]
    let events = input.text()
    if claims["events"] == nil { claims["events"] = .string(events) }
    let token = FuzzProvider.sign(header: header, payload: JSONValue.object(claims).serialized())
    let outcome = runBlocking { () -> AppleNotification? in
        try? await AppleNotificationTarget.verifier.verify(token, now: FuzzProvider.now)
    }
    guard let notification = outcome else { return 0 }
    fuzzCheck(
        !notification.type.isEmpty && !notification.subject.isEmpty && !notification.id.isEmpty,
        "accepted a notification without type, sub or jti: \(notification)")
    fuzzCheck(notification.eventTime.timeIntervalSince1970.isFinite, "event time is not finite: \(notification)")
    return 0
}

/// The Apple provider, configured as usual except that its keys are the fuzz provider's ES256 key.
enum AppleNotificationTarget {
    static let verifier: AppleNotificationVerifier = {
        do {
            var provider = try AuthGateConfiguration.parse(yaml: "", baseDirectory: "", environment: [:]).providers.apple
            provider.enabled = true
            provider.audiences = [FuzzProvider.audience]
            provider.algorithm = .es256
            let keySet = FuzzProvider.keySet(provider: "apple")
            guard let apple = IdentityVerifierRegistry.makeVerifier(provider, keySet: keySet) as? AppleVerifier else {
                fatalError("the Apple provider's verifier is not an AppleVerifier")
            }
            return AppleNotificationVerifier(verifier: apple)
        } catch {
            fatalError("the default configuration does not parse: \(error)")
        }
    }()
}
