#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (Fuzz/Corpus/<Target>/) from the real provider
fixtures, the example configurations and the shapes the tests use. Run it again after changing
it; the seeds are committed, small, and named for what they hold."""
import base64, hashlib, json, os, pathlib, shutil

root = pathlib.Path(__file__).resolve().parent
repo = root.parent
fixtures = repo / "Tests/AuthGateCoreTests/Fixtures/provider-tokens"
corpus = root / "Corpus"

def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

def write(target: str, name: str, data) -> None:
    if isinstance(data, str):
        data = data.encode()
    directory = corpus / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data)

shutil.rmtree(corpus, ignore_errors=True)
tokens = sorted(p for p in fixtures.glob("*.json"))
cases = [json.loads(p.read_text()) for p in tokens]

# JSON: real claim sets and headers, plus edge cases of numbers, escapes and nesting.
for path, case in zip(tokens[:12], cases[:12]):
    write("FuzzJSON", path.stem, json.dumps(case.get("claims", {})))
for name, text in {
    "numbers": '[0,-0,1e308,-1e-308,9223372036854775807,-9223372036854775808,9223372036854775808,1.5,2E+3,0.1e-2]',
    "escapes": '{"a":"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/","\\u0000":null}',
    "nested": '{"a":[{"b":[[[[{"c":true}]]]]}],"d":false}',
    "metadata": '{"data":{"display_name":"K\u212aelly","avatar":"https://x.example/a.png","n":3}}',
}.items():
    write("FuzzJSON", name, text)

# Base64url: the signature segments of real tokens, and short byte strings.
for path, case in zip(tokens[:8], cases[:8]):
    write("FuzzBase64URL", path.stem, case["token"].split(".")[2])
for name, data in {"empty": b"", "one": b"\x00", "two": b"\xff\xfe", "three": b"abc", "padded": b"QQ==", "std-alphabet": b"+/+/"}.items():
    write("FuzzBase64URL", name, data)

# ID tokens. Mode 0: the real tokens as sent. Mode 1: header, claims and nonce, signed by the
# harness with the fuzz provider's key (issuer, audience and clock as FuzzProvider pins them).
for path, case in zip(tokens, cases):
    if not path.name.startswith("apple-notification"):
        write("FuzzIDToken", "raw-" + path.stem[:40], b"\x00" + case["token"].encode())
now = 1_700_000_000
header = json.dumps({"alg": "ES256", "kid": "fuzz-key", "typ": "JWT"})
def signed(name: str, claims: dict, nonce: str = "", mode: int = 1, access: str = "") -> None:
    tail = b"\x00" + access.encode() if access else b""
    write("FuzzIDToken", name, bytes([mode]) + header.encode() + b"\x00" + json.dumps(claims).encode() + b"\x00" + nonce.encode() + tail)
base = {"iss": "https://issuer.fuzz.example", "aud": "fuzz-audience", "sub": "user-1", "exp": now + 600, "iat": now - 10}
signed("valid", base)
signed("valid-nonce", dict(base, nonce=hashlib.sha256(b"raw-nonce").hexdigest()), "raw-nonce")
signed("audience-list-email", dict(base, aud=["other", "fuzz-audience"], email="a@example.com", email_verified=True, nbf=now - 5))
signed("expired", dict(base, exp=now - 100))
signed("tampered", base, mode=2)
signed("stranger", base, mode=3)
# at_hash: the left half of the access token's SHA-256 (the key is ES256), and another token's.
at_hash = base64.urlsafe_b64encode(hashlib.sha256(b"ya29.fuzz-access").digest()[:16]).rstrip(b"=").decode()
signed("at-hash", dict(base, at_hash=at_hash), access="ya29.fuzz-access")
signed("at-hash-other", dict(base, at_hash=at_hash), access="ya29.another")

# JWK sets: the providers' real sets (first byte: the configured algorithm, 0 = RS256) and EC sets.
for path in sorted((fixtures / "jwks").glob("*-jwks-*.json")):
    write("FuzzJWKSet", path.stem[:40], b"\x00" + path.read_bytes())
ec = {"keys": [{"kty": "EC", "crv": "P-256", "kid": "e1", "use": "sig", "alg": "ES256",
                "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uE6GNGgk", "y": "x_FEzRu9m36HLN_tue659LNpXW6pM5Yb7j8-i1mqFQY"},
               {"kty": "RSA", "kid": "r1", "n": "AQAB", "e": "AQAB"}, {"kid": ""}, 7]}
write("FuzzJWKSet", "ec-mixed", b"\x03" + json.dumps(ec).encode())

# Request targets: target, Host, method.
for index, (target, host, method) in enumerate([
    ("/api/users?x=1", "gw", "GET"), ("/public/../api/admin/users", "gw", "GET"), ("/%2e%2e/api", "GW.:8080", "GET"),
    ("//api//x/./y/", "api.example.com", "POST"), ("/s/%41%7e%2F", "[::1]:443", "PUT"), ("http://Api.Example.com/w/a?q#f", "", "POST"),
    ("/public/a%5Cb", "gw", "GET"), ("/api/x/%2e./members", "x", "DELETE"), ("/w", "h", "PUT"), ("*", "gw", "OPTIONS"),
]):
    write("FuzzRequestTarget", f"target-{index}", f"{target}\0{host}\0{method}")

# Proxy heads: raw HTTP/1.1, with TOKEN and ADMIN standing for real tokens.
for index, head in enumerate([
    "GET /public/x HTTP/1.1\r\nHost: gw\r\nX-AuthGate-User-Id: spoofed\r\n\r\n",
    "GET /members/a HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer TOKEN\r\n\r\n",
    "GET /api/a/../b HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer TOKEN\r\n\r\n",
    "GET /admin/users HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ADMIN\r\nConnection: keep-alive\r\n\r\n",
    "POST /maybe/x HTTP/1.1\r\nHost: gw\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc",
    "GET /members/ws HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer TOKEN\r\n\r\n",
    "GET /public/a HTTP/1.1\r\nHost: gw\r\n\r\nGET /maybe HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer TOKEN\r\nX-Request-Id: abc\r\n\r\n",
    "GET http://gw/public/%2e%2e/members/x HTTP/1.1\r\nHost: other\r\n\r\n",
    "GET /public/c HTTP/1.1\r\nHost: gw\r\nCookie: a=1; __Host-authgate-flow-s=x;authgate-flow-t=y\r\nCookie: \t__Host-authgate-flow-u=z\r\n\r\n",
    "GET /members/ws HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat, authgate, authgate.bearer.TOKEN\r\n\r\n",
]):
    write("FuzzProxyDecision", f"head-{index}", head)

# RESP replies (first byte: chunk size), RESP2 and RESP3.
for index, reply in enumerate([
    b"+OK\r\n", b"-ERR wrong\r\n", b":123\r\n", b"$5\r\nhello\r\n", b"$-1\r\n", b"*2\r\n$3\r\nfoo\r\n:1\r\n",
    b"*3\r\n*1\r\n+a\r\n$0\r\n\r\n*-1\r\n", b"%1\r\n+k\r\n+v\r\n", b",3.14\r\n", b"#t\r\n", b"_\r\n", b">2\r\n+message\r\n+x\r\n",
    b"=15\r\ntxt:Some string\r\n", b"(3492890328409238509324850943850943825024385\r\n", b"~1\r\n:1\r\n",
]):
    write("FuzzRESP", f"reply-{index}", bytes([7]) + reply)

# Configurations: the committed ones, with overrides.
for path in (repo / "config").glob("*.yaml"):
    write("FuzzConfiguration", path.stem, path.read_bytes())
write("FuzzConfiguration", "overrides", "server: { port: 8080 }\n\0AUTHGATE_SERVER_PORT=99999\0AUTHGATE_TOKENS_ACCESS_TOKEN_TTL=9223372036854775807s\0AUTHGATE_STORE_REDIS_URL=redis://:pw@h:1/0")
write("FuzzConfiguration", "routes", "routes:\n  - { name: a, path_prefix: /a/, upstreams: [http://127.0.0.1:1], auth: required, max_body: 1MiB, timeout: 30s }\n")

# Apple notifications: header, claims, events.
for path, case in zip(tokens, cases):
    if path.name.startswith("apple-notification"):
        claims = dict(case["claims"], aud="fuzz-audience", iss="https://appleid.apple.com", exp=now + 600, iat=now - 10)
        events = claims.pop("events")
        write("FuzzAppleNotification", path.stem[:40], header.encode() + b"\0" + json.dumps(claims).encode() + b"\0" + events.encode())

# Stored records (first byte: 0 user, 1 identity, 2 session), as this version writes them and as
# the Codable encoder of earlier versions did (fractional milliseconds).
records = {
    "user": (0, '{"id":"6f1c1a52-7d0e-4c39-9b7b-2d51b2a3c0de","aud":"authenticated","role":"authenticated","email":"a@example.com",'
        '"emailConfirmedAt":1790000000000,"appMetadata":{"provider":"apple","providers":["apple"]},"userMetadata":{"name":"A"},'
        '"isAnonymous":false,"createdAt":1790000000000,"updatedAt":1790000000123,"lastSignInAt":1790000000123}'),
    "user-banned-deleted": (0, '{"id":"u","aud":"authenticated","role":"authenticated","appMetadata":{},"userMetadata":{},'
        '"isAnonymous":true,"createdAt":1790000000123.456,"updatedAt":1790000000123,"bannedUntil":1790003600000,"deletedAt":1790000001000}'),
    "identity": (1, '{"identityID":"i","userID":"u","provider":"apple","subject":"001.abc","identityData":{"sub":"001.abc","email":"a@x"},'
        '"email":"a@x","createdAt":1790000000000,"updatedAt":1790000000000,"lastSignInAt":1790000000000}'),
    "session": (2, '{"id":"s","userID":"u","createdAt":1790000000000,"refreshedAt":1790000000000,"aal":"aal1",'
        '"amr":[{"method":"oauth","timestamp":1790000000}]}'),
}
for name, (kind, text) in records.items():
    write("FuzzStoredRecords", name, bytes([kind]) + text.encode())

# WebSocket relay scripts: a step byte (action in the low 7 bits, 0x80 for the client's side), a
# frame's control byte (0x80 fin, the opcode's index), its length, payload and (client) mask key.
close_from_upstream = bytes([0x00, 0x83, 2, 0x03, 0xE8])
for name, script in {
    "upstream-close-then-shutdown": close_from_upstream + bytes([0x04, 0x07]),
    "upstream-close-unclean-tls-end": close_from_upstream + bytes([0x03, 0x02, 0x07]),
    "client-text-then-fin": bytes([0x80, 0x81, 5]) + b"hello" + bytes([1, 2, 3, 4, 0x82, 0x07]),
    "client-close-then-text": bytes([0x80, 0x83, 2, 0x03, 0xE8, 1, 2, 3, 4, 0x80, 0x81, 1, 0x41, 5, 6, 7, 8, 0x07]),
    "upstream-close-then-session-end": close_from_upstream + bytes([0x05, 0x07]),
    "client-garbage": bytes([0x81]) + b"\x88\xff\x00\x00" + bytes([0, 0x07]),
}.items():
    write("FuzzWebSocketRelay", name, script)

# Browser flow: an allow-list glob, NUL, a redirect_to, NUL, a query or form.
for name, (pattern, candidate, form) in {
    "path-glob": ("http://localhost:3000/**", "http://localhost:3000/cb?next=1#x", "provider=google&redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fcb"),
    "subdomain": ("https://*.example.com/cb", "https://Preview.Example.com:443/cb", "state=6f1c0000-0000-4000-8000-000000000000&code=4%2F0AQ"),
    "braces-sets": ("https://{app,admin}.example.com/[a-c]?/\\*", "https://app.example.com/b1/*", "a=1&a=2&b=x+y%2Bz"),
    "user-info": ("https://**", "https://app.example.com@evil.example/", "user=%7B%22name%22%3A%7B%22firstName%22%3A%22Jane%22%7D%7D"),
    "dot-segments": ("https://app.example.com/**", "https://app.example.com/cb/%2e%2E/admin", "x=%zz"),
    "custom-scheme": ("com.example.app://login-callback", "com.example.app://login-callback", "error=access_denied&error_description="),
    "loopback": ("", "http://[0:0::1]:8080/any", "code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"),
}.items():
    write("FuzzRedirect", name, pattern.encode() + b"\x00" + candidate.encode() + b"\x00" + form.encode())

# HTTP/1.x answers: a control byte (method, HTTP/1.0, Content-Length, chunked, two parts,
# trailer), a status code in two bytes, a field count, NUL, the reason, NUL, names and values,
# NUL-separated, then the body.
def answer(control: int, code: int, reason: str, fields, body: bytes) -> bytes:
    head = bytes([control, code >> 8, code & 0xFF, len(fields)])
    parts = [reason.encode()] + [p.encode() for field in fields for p in field]
    return head + b"\x00".join(parts) + b"\x00" + body

for name, data in {
    "json-content-length": answer(0b1000, 200, "OK", [("Content-Type", "application/json"), ("X-Request-Id", "r1")], b'{"a":1}'),
    "chunked-two-parts-trailer": answer(0b1110000, 200, "OK", [("Cache-Control", "no-store")], b"hello world"),
    "head-request": answer(0b1001, 200, "OK", [("ETag", '"v1"')], b"body a HEAD must not carry"),
    "no-content-with-body": answer(0b1000, 204, "No Content", [("X-A", "1")], b"HTTP/1.1 200 OK\r\n\r\n"),
    "not-modified": answer(0, 304, "Not Modified", [("ETag", '"v1"')], b""),
    "http10-chunked-asked": answer(0b10100, 200, "OK", [("Connection", "keep-alive")], b"raw to the close"),
    "continue": answer(0, 100, "Continue", [], b""),
    "custom-reason": answer(0b1000, 299, "Fine \tThanks \xc3\xa9", [("X-Obs", "caf\xc3\xa9"), ("X-Tab", "a\tb")], b"x"),
    "split-value": answer(0b1000, 200, "OK", [("Location", "/a\r\nSet-Cookie: s=1")], b""),
    "bad-name": answer(0, 200, "OK", [("Bad Name", "v")], b""),
    "connect": answer(0b1011, 200, "Connection Established", [("X-A", "1")], b"tunnel bytes"),
}.items():
    write("FuzzResponseFraming", name, data)
