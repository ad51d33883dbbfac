import Testing

@testable import AuthGateCore

@Suite("which provider an id_token grant names: GoTrue's getProvider", .timeLimit(.minutes(3)))
struct IDTokenProviderResolutionTests {
    private func resolution(googleEnabled: Bool = true) throws -> IDTokenProviderResolution {
        let configuration = try AuthGateConfiguration.parse(
            yaml: """
                providers:
                  apple: { enabled: true, audiences: [com.example.app] }
                  google: { enabled: \(googleEnabled), audiences: [web] }
                  oidc: [ { name: corp, issuer: "https://login.corp.example/realms/staff", audiences: [app] } ]
                """,
            baseDirectory: "", environment: [:])
        return IDTokenProviderResolution(configuration.providers)
    }

    /// The provider, or the refusal's code and client text.
    private func outcome(_ resolution: IDTokenProviderResolution, _ provider: String, _ issuer: String = "") -> String {
        do {
            return try resolution.provider(named: provider, issuer: issuer)
        } catch let error as AuthGateError {
            return "\(error.code): \(error.clientText?.text ?? "")"
        } catch {
            return "\(error)"
        }
    }

    @Test("by name, or without one by issuer (Apple's two, Google's, an OIDC provider's); names compared exactly")
    func selects() throws {
        let resolution = try resolution()
        #expect(outcome(resolution, "apple") == "apple")
        #expect(outcome(resolution, "google") == "google")
        #expect(outcome(resolution, "corp") == "corp")
        #expect(outcome(resolution, "", "https://appleid.apple.com") == "apple")
        #expect(outcome(resolution, "", "https://account.apple.com") == "apple")
        #expect(outcome(resolution, "", "https://accounts.google.com") == "google")
        #expect(outcome(resolution, "", "https://login.corp.example/realms/staff") == "corp")
        // GoTrue's switch tries Apple first: an Apple issuer wins over another provider's name.
        #expect(outcome(resolution, "google", "https://appleid.apple.com") == "apple")
        #expect(outcome(resolution, "Apple") == #"unknown_provider: Custom OIDC provider "Apple" not allowed"#)
    }

    @Test("nothing configured by that name or issuer: GoTrue's text, the name quoted as Go quotes it and cut at 64 characters")
    func unknown() throws {
        let resolution = try resolution()
        #expect(outcome(resolution, "facebook") == #"unknown_provider: Custom OIDC provider "facebook" not allowed"#)
        #expect(outcome(resolution, "", "https://issuer.example") == #"unknown_provider: Custom OIDC provider "" not allowed"#)
        #expect(
            outcome(resolution, "a\"b\\c\n\u{7}\u{1F}\u{7F}é😀")
                == #"unknown_provider: Custom OIDC provider "a\"b\\c\n\a\x1f\x7f\u00e9\U0001f600" not allowed"#)
        let long = String(repeating: "p", count: 300)
        #expect(outcome(resolution, long) == "unknown_provider: Custom OIDC provider \"\(String(repeating: "p", count: 64))\" not allowed")
    }

    @Test("a configured provider that is off: provider_disabled naming its issuer, by name or by issuer")
    func disabled() throws {
        let resolution = try resolution(googleEnabled: false)
        let expected = #"provider_disabled: Provider (issuer "https://accounts.google.com") is not enabled"#
        #expect(outcome(resolution, "google") == expected)
        #expect(outcome(resolution, "", "accounts.google.com") == expected)
        #expect(outcome(resolution, "apple") == "apple")
    }
}
