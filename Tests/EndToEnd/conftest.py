"""Fixtures for the end-to-end suite: fake Apple and Google providers, and a real `authgate serve`.

The gateway runs on the Redis that `make test` started (AUTHGATE_TEST_REDIS_URL), with a signing
key made by `authgate keys generate`, and providers whose JWKS are served by a local HTTP server
with keys made here. Tokens are minted with PyJWT, the way Apple and Google shape them.
AUTHGATE_E2E_BINARY names another gateway build to run (the debug build by default).
"""

import hashlib
import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ROOT = Path(__file__).resolve().parents[2]
# The debug build `make test` builds; AUTHGATE_E2E_BINARY runs the suite on another build, e.g. the
# release binary that ships (`make release`, then AUTHGATE_E2E_BINARY=.build/release/authgate); a
# relative path is from the repository's root.
BINARY = ROOT / (os.environ.get("AUTHGATE_E2E_BINARY") or ".build/debug/authgate")
APPLE_AUDIENCE = "com.example.authgate.e2e"
GOOGLE_AUDIENCE = "1234-e2e.apps.googleusercontent.com"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeProvider:
    """One provider: an RSA key, its JWKS, and token minting."""

    def __init__(self, name: str, issuer: str, audience: str):
        self.name = name
        self.issuer = issuer
        self.audience = audience
        self.kid = f"{name}-{secrets.token_hex(4)}"
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": self.kid, "use": "sig", "alg": "RS256"})
        return {"keys": [jwk]}

    def id_token(self, sub: str, email: str | None = None, raw_nonce: str | None = None, **extra) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.audience, "sub": sub, "iat": now, "exp": now + 600, "jti": uuid.uuid4().hex}
        if email is not None:
            claims["email"] = email
            claims["email_verified"] = "true" if self.name == "apple" else True
        if raw_nonce is not None:
            claims["nonce"] = hashlib.sha256(raw_nonce.encode()).hexdigest()
        claims.update(extra)
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})


GOOGLE_WEB_SECRET = "e2e-google-web-secret"


class Providers:
    def __init__(self):
        self.apple = FakeProvider("apple", "https://appleid.apple.com", APPLE_AUDIENCE)
        self.google = FakeProvider("google", "https://accounts.google.com", GOOGLE_AUDIENCE)
        # Google's token endpoint for the browser flow: code -> the token response it is exchanged for.
        self.google_codes: dict[str, dict] = {}
        # Who signs in at the fake Google sign-in page (/google/auth) next.
        self.next_google_sub = "browser-user"
        self.google_token_calls: list[dict] = []
        providers = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                if self.path != "/google/token":
                    self.send_response(404)
                    self.end_headers()
                    return
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
                fields = {name: values[0] for name, values in form.items()}
                providers.google_token_calls.append(fields)
                answer = providers.google_codes.pop(fields.get("code", ""), None)
                if fields.get("client_secret") != GOOGLE_WEB_SECRET or fields.get("client_id") != GOOGLE_AUDIENCE:
                    status, answer = 401, {"error": "invalid_client"}
                elif answer is None or fields.get("grant_type") != "authorization_code":
                    status, answer = 400, {"error": "invalid_grant"}
                else:
                    status = 200
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path)
                if path.path == "/google/auth":
                    # Google's sign-in page, for a browser: the user `next_google_sub` signs in at
                    # once, and the browser goes back to the flow's redirect_uri with a code.
                    query = {name: values[0] for name, values in urllib.parse.parse_qs(path.query).items()}
                    sub = providers.next_google_sub
                    code = providers.register_google_code(sub=sub, email=f"{sub}@example.com", nonce=query["nonce"])
                    target = query["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": query["state"]})
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                provider = {"/apple/keys": providers.apple, "/google/keys": providers.google}.get(self.path)
                if provider is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                body = json.dumps(provider.jwks()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", "public, max-age=3600")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def register_google_code(self, sub: str, email: str, nonce: str) -> str:
        """A code Google's token endpoint exchanges once for an ID token carrying `nonce` as sent."""
        code = "4/" + secrets.token_urlsafe(16)
        self.google_codes[code] = {
            "access_token": "ya29." + secrets.token_hex(8), "token_type": "Bearer", "expires_in": 3599,
            "refresh_token": "1//" + secrets.token_hex(8), "id_token": self.google.id_token(sub, email=email, nonce=nonce),
        }
        return code

    def close(self):
        self.server.shutdown()


class Gateway:
    """A running `authgate serve` and what tests need to reach it."""

    def __init__(self, providers: Providers, reuse_interval: str, tls: bool = False, routes: list | None = None,
                 browser_flow: dict | None = None, callback_over_tls: bool = False):
        redis_url = os.environ.get("AUTHGATE_TEST_REDIS_URL")
        if not redis_url:
            raise RuntimeError("AUTHGATE_TEST_REDIS_URL is not set: run the suite through `make test`")
        if not BINARY.exists():
            raise RuntimeError(f"{BINARY} is missing: run `swift build` (make test does)")
        self.directory = Path(tempfile.mkdtemp(prefix="authgate-e2e-"))
        subprocess.run([str(BINARY), "keys", "generate", "--out", str(self.directory / "key.pem"), "--kid", "e2e-key"], check=True, capture_output=True)
        self.port = free_port()
        server = {"host": "127.0.0.1", "port": self.port}
        self.ca_file = None
        if tls:
            # A local CA and a certificate for localhost, made with openssl for this run.
            self.ca_file = str(self.directory / "ca.pem")
            make_certificates(self.directory)
            server["tls"] = {"certificate_chain_file": "server.pem", "private_key_file": "server.key"}
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.url = f"{self.base}/auth/v1"
        config = {
            "server": server,
            "store": {"kind": "redis", "redis": {"url": redis_url, "key_prefix": f"e2e-{secrets.token_hex(4)}:"}},
            "tokens": {"signing_keys": [{"kid": "e2e-key", "file": "key.pem"}], "refresh": {"reuse_interval": reuse_interval}},
            "providers": {
                "apple": {"enabled": True, "audiences": [APPLE_AUDIENCE], "jwks_url": f"http://127.0.0.1:{providers.port}/apple/keys"},
                "google": {"enabled": True, "audiences": [GOOGLE_AUDIENCE], "jwks_url": f"http://127.0.0.1:{providers.port}/google/keys"},
                "anonymous": {"enabled": True},
            },
            "rate_limits": {"token": "off", "signup": "off", "nonce": "off"},
            "security": {"manual_linking_enabled": True},
            "browser_flow": {
                "enabled": True, "site_url": "http://localhost:3000", "redirect_urls": ["http://localhost:3000/**"],
                "google": {"client_id": GOOGLE_AUDIENCE, "client_secret_file": "google-web-secret",
                           "token_url": f"http://127.0.0.1:{providers.port}/google/token"},
            },
            # By default an upstream nobody listens on: the metrics check drives the proxy's families with it.
            "routes": routes or [{"name": "api", "path_prefix": "/api/", "upstreams": [f"http://127.0.0.1:{free_port()}"], "auth": "required",
                                  "allow_anonymous": True}],
        }
        if callback_over_tls:
            config["browser_flow"]["callback_url"] = f"{self.base}/auth/v1/callback"
        for name, value in (browser_flow or {}).items():
            if isinstance(value, dict):
                config["browser_flow"][name].update(value)
            else:
                config["browser_flow"][name] = value
        (self.directory / "google-web-secret").write_text(GOOGLE_WEB_SECRET)
        (self.directory / "authgate.yaml").write_text(json.dumps(config))
        self.log = open(self.directory / "authgate.log", "w")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AUTHGATE_")}
        self.process = subprocess.Popen([str(BINARY), "serve", "--config", str(self.directory / "authgate.yaml")], stdout=self.log, stderr=self.log, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("authgate serve exited:\n" + (self.directory / "authgate.log").read_text())
            try:
                with urllib.request.urlopen(f"{self.base}/readyz", timeout=1, context=self.ssl_context()) as response:
                    if response.status == 200 and json.load(response)["status"] == "ready":
                        break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            raise RuntimeError("authgate serve did not become ready:\n" + (self.directory / "authgate.log").read_text())

    def service_role_token(self) -> str:
        """A token for the admin API, as an operator mints one (`authgate tokens service-role`)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AUTHGATE_")}
        minted = subprocess.run([str(BINARY), "tokens", "service-role", "--config", str(self.directory / "authgate.yaml"), "--ttl", "15m"],
                                check=True, capture_output=True, text=True, env=env)
        return minted.stdout.strip()

    def ssl_context(self, minimum=None, maximum=None):
        """A client context trusting this gateway's CA (None for a plain gateway)."""
        if self.ca_file is None:
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if minimum is not None:
            context.minimum_version = minimum
        if maximum is not None:
            context.maximum_version = maximum
        return context

    def log_text(self) -> str:
        """What the gateway has logged so far (JSON lines)."""
        self.log.flush()
        return (self.directory / "authgate.log").read_text()

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def make_certificates(directory: Path):
    """ca.pem (a throwaway CA) and server.pem/server.key for localhost and 127.0.0.1, in `directory`."""
    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], check=True, capture_output=True, cwd=directory)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=AuthGate e2e CA")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=localhost")
    (directory / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2",
            "-extfile", "server.ext")


@pytest.fixture(scope="session")
def providers():
    instance = Providers()
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def gateway(providers):
    instance = Gateway(providers, reuse_interval="2s")
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def tls_gateway(providers):
    instance = Gateway(providers, reuse_interval="2s", tls=True)
    yield instance
    instance.close()
