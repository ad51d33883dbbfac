"""The official Python client (supabase-auth 2.34.1, unmodified) against a running AuthGate."""

import base64
import hashlib
import http.cookiejar
import json
import secrets
import time
import urllib.error
import urllib.request

import jwt
import pytest
from supabase_auth import SyncGoTrueClient
from supabase_auth.errors import AuthApiError

from conftest import APPLE_AUDIENCE, GOOGLE_AUDIENCE


def client_for(gateway) -> SyncGoTrueClient:
    return SyncGoTrueClient(url=gateway.url, auto_refresh_token=False, persist_session=True)


def raw(gateway, method: str, path: str, body: dict | None = None, headers: dict | None = None):
    """A plain HTTP call: (status, headers, parsed JSON body or None)."""
    request = urllib.request.Request(f"{gateway.url}{path}", method=method, data=json.dumps(body).encode() if body is not None else None)
    request.add_header("Content-Type", "application/json;charset=UTF-8")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            data = response.read()
            return response.status, response.headers, json.loads(data) if data else None
    except urllib.error.HTTPError as error:
        data = error.read()
        return error.code, error.headers, json.loads(data) if data else None


def unverified_claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def test_anonymous_sign_in_get_user_and_update_user(gateway):
    client = client_for(gateway)
    response = client.sign_in_anonymously({"options": {"data": {"theme": "dark"}}})
    user = response.user
    assert user.is_anonymous is True
    assert user.email == "" and user.phone == ""
    assert user.user_metadata == {"theme": "dark"}
    assert user.app_metadata == {}
    assert user.identities == []
    assert response.session.token_type == "bearer"
    assert response.session.expires_in == 3600
    claims = unverified_claims(response.session.access_token)
    assert claims["is_anonymous"] is True and claims["role"] == "authenticated" and claims["aal"] == "aal1"
    assert claims["amr"][0]["method"] == "anonymous"

    fetched = client.get_user()
    assert fetched.user.id == user.id

    updated = client.update_user({"data": {"full_name": "Ada Lovelace", "theme": None}})
    assert updated.user.user_metadata == {"full_name": "Ada Lovelace"}
    assert client.get_user().user.user_metadata == {"full_name": "Ada Lovelace"}


@pytest.mark.parametrize("provider_name", ["apple", "google"])
def test_sign_in_with_id_token_and_nonce(gateway, providers, provider_name):
    provider = getattr(providers, provider_name)
    nonce = secrets.token_urlsafe(24)
    subject = f"{provider_name}-{secrets.token_hex(6)}"
    token = provider.id_token(subject, email=f"Person.{subject}@Example.com", raw_nonce=nonce, name="Person")
    client = client_for(gateway)
    response = client.sign_in_with_id_token({"provider": provider_name, "token": token, "nonce": nonce})
    user = response.user
    assert user.email == f"person.{subject}@example.com"
    assert user.email_confirmed_at is not None
    assert user.is_anonymous is False
    assert user.app_metadata == {"provider": provider_name, "providers": [provider_name]}
    assert len(user.identities) == 1
    identity = user.identities[0]
    assert identity.provider == provider_name and identity.id == subject and identity.user_id == user.id
    assert identity.identity_data["provider_id"] == subject
    assert identity.identity_data["email_verified"] is True
    assert user.user_metadata["full_name"] == "Person"
    claims = unverified_claims(response.session.access_token)
    assert claims["sub"] == user.id and claims["amr"][0]["method"] == "oauth" and claims["email"] == user.email

    # The same ID token again is a replay: refused as GoTrue words it, from any client.
    status, _, body = raw(gateway, "POST", "/token?grant_type=id_token", {"provider": provider_name, "id_token": token, "nonce": nonce})
    assert status == 400 and body == {"error": "invalid request", "error_description": "ID token has already been used"}

    # A second sign-in with a fresh token finds the same user.
    again = client_for(gateway).sign_in_with_id_token({"provider": provider_name, "token": provider.id_token(subject, email=f"person.{subject}@example.com")})
    assert again.user.id == user.id


def test_refresh_session_keeps_session_id(gateway):
    client = client_for(gateway)
    first = client.sign_in_anonymously()
    refreshed = client.refresh_session()
    assert refreshed.session.refresh_token != first.session.refresh_token
    before, after = unverified_claims(first.session.access_token), unverified_claims(refreshed.session.access_token)
    assert before["session_id"] == after["session_id"]
    assert refreshed.user.id == first.user.id


def test_get_claims_verifies_against_our_jwks_and_pyjwt_agrees(gateway):
    client = client_for(gateway)
    session = client.sign_in_anonymously().session
    result = client.get_claims()
    assert result["claims"]["sub"] == session.user.id
    assert result["headers"]["kid"] == "e2e-key" and result["headers"]["alg"] == "ES256"
    # Independently: PyJWT with our JWKS, checking aud, iss and exp.
    signing_key = jwt.PyJWKClient(f"{gateway.url}/.well-known/jwks.json").get_signing_key_from_jwt(session.access_token)
    claims = jwt.decode(session.access_token, signing_key.key, algorithms=["ES256"], audience="authenticated", issuer=gateway.url, options={"require": ["exp", "iat", "sub"]})
    assert claims["sub"] == session.user.id
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(session.access_token, signing_key.key, algorithms=["ES256"], audience="someone-else", issuer=gateway.url)
    status, headers, body = raw(gateway, "GET", "/.well-known/jwks.json")
    assert status == 200 and headers["Cache-Control"] == "public, max-age=600"
    assert [key["kid"] for key in body["keys"]] == ["e2e-key"]


def test_sign_out_scopes(gateway, providers):
    subject = f"apple-{secrets.token_hex(6)}"
    clients = []
    for _ in range(3):
        client = client_for(gateway)
        client.sign_in_with_id_token({"provider": "apple", "token": providers.apple.id_token(subject, email=f"{subject}@privaterelay.appleid.com")})
        clients.append(client)
    tokens = [client.get_session().access_token for client in clients]

    def alive(token):
        return raw(gateway, "GET", "/user", headers={"Authorization": f"Bearer {token}"})[0] == 200

    clients[0].sign_out({"scope": "local"})
    assert [alive(token) for token in tokens] == [False, True, True]
    clients[1].sign_out({"scope": "others"})
    assert [alive(token) for token in tokens] == [False, True, False]
    clients[1].sign_out({"scope": "global"})
    assert [alive(token) for token in tokens] == [False, False, False]
    status, _, body = raw(gateway, "GET", "/user", headers={"Authorization": f"Bearer {tokens[1]}", "X-Supabase-Api-Version": "2024-01-01"})
    assert status == 403 and body == {"code": "session_not_found", "message": "Session from session_id claim in JWT does not exist"}


def test_link_identity_upgrades_the_anonymous_user(gateway, providers):
    client = client_for(gateway)
    anonymous = client.sign_in_anonymously({"options": {"data": {"cart": 3}}})
    subject = f"apple-{secrets.token_hex(6)}"
    nonce = secrets.token_urlsafe(16)
    status, _, body = raw(
        gateway, "POST", "/token?grant_type=id_token",
        {"provider": "apple", "id_token": providers.apple.id_token(subject, email=f"{subject}@example.com", raw_nonce=nonce), "nonce": nonce, "link_identity": True},
        {"Authorization": f"Bearer {anonymous.session.access_token}"},
    )
    assert status == 200, body
    assert body["user"]["id"] == anonymous.user.id
    assert body["user"]["is_anonymous"] is False
    assert body["user"]["app_metadata"]["providers"] == ["apple"]
    assert body["user"]["user_metadata"]["cart"] == 3
    # The anonymous session refreshes into the same, now permanent, user.
    refreshed = client.refresh_session()
    user = client.get_user(refreshed.session.access_token).user
    assert user.id == anonymous.user.id and user.is_anonymous is False
    assert [identity.provider for identity in user.identities] == ["apple"]
    assert unverified_claims(refreshed.session.access_token)["is_anonymous"] is False

    # The same identity cannot be linked to anyone else, and nothing changes.
    other = client_for(gateway).sign_in_anonymously()
    status, headers, body = raw(
        gateway, "POST", "/token?grant_type=id_token",
        {"provider": "apple", "id_token": providers.apple.id_token(subject), "link_identity": True},
        {"Authorization": f"Bearer {other.session.access_token}", "X-Supabase-Api-Version": "2024-01-01"},
    )
    assert status == 422 and body == {"code": "identity_already_exists", "message": "Identity is already linked to another user"}
    assert headers["x-sb-error-code"] == "identity_already_exists"
    # Linking without a bearer token is GoTrue's OAuth-style error.
    status, _, body = raw(gateway, "POST", "/token?grant_type=id_token", {"provider": "apple", "id_token": providers.apple.id_token(subject), "link_identity": True})
    assert status == 400 and body == {"error": "invalid request", "error_description": "Linking requires a valid user access token in Authorization"}


def test_get_user_identities_and_unlink_identity(gateway, providers):
    client = client_for(gateway)
    subject = f"apple-{secrets.token_hex(6)}"
    nonce = secrets.token_urlsafe(16)
    signed_in = client.sign_in_with_id_token(
        {"provider": "apple", "token": providers.apple.id_token(subject, email=f"{subject}@privaterelay.appleid.com", raw_nonce=nonce), "nonce": nonce}
    )
    # Link Google to the same user (the id_token grant with link_identity).
    google_email = f"g-{secrets.token_hex(4)}@example.com"
    status, _, body = raw(
        gateway, "POST", "/token?grant_type=id_token",
        {"provider": "google", "id_token": providers.google.id_token(f"g-{secrets.token_hex(6)}", email=google_email), "link_identity": True},
        {"Authorization": f"Bearer {signed_in.session.access_token}"},
    )
    assert status == 200, body
    client.refresh_session()
    identities = client.get_user_identities().identities
    assert sorted(identity.provider for identity in identities) == ["apple", "google"]
    apple = next(identity for identity in identities if identity.provider == "apple")

    client.unlink_identity(apple)
    refreshed = client.refresh_session()
    assert unverified_claims(refreshed.session.access_token)["app_metadata"]["providers"] == ["google"]
    remaining = client.get_user_identities().identities
    assert [identity.provider for identity in remaining] == ["google"]
    assert client.get_user().user.email == google_email, "the email moves to the remaining identity's"

    # The last identity cannot go, and an identity that is not the caller's is not found.
    with pytest.raises(AuthApiError) as last:
        client.unlink_identity(remaining[0])
    assert last.value.code == "single_identity_not_deletable"
    status, _, body = raw(gateway, "DELETE", "/user/identities/not-a-uuid", None, {"Authorization": f"Bearer {refreshed.session.access_token}"})
    assert status == 404 and body["error_code"] == "validation_failed"


def test_refresh_token_reuse(gateway):
    client = client_for(gateway)
    first = client.sign_in_anonymously().session
    child = client.refresh_session(first.refresh_token).session
    # The parent within the reuse interval (2 s here) returns the current child.
    again = client_for(gateway).refresh_session(first.refresh_token).session
    assert again.refresh_token == child.refresh_token
    # After the interval, reusing the parent revokes the session: the child dies too.
    time.sleep(2.5)  # the rule under test is defined by elapsed time
    with pytest.raises(AuthApiError) as reused:
        client_for(gateway).refresh_session(first.refresh_token)
    assert reused.value.status == 400 and reused.value.code == "refresh_token_already_used"
    assert reused.value.message == "Invalid Refresh Token: Already Used"
    with pytest.raises(AuthApiError) as dead:
        client_for(gateway).refresh_session(child.refresh_token)
    assert dead.value.code == "refresh_token_not_found"


def test_admin_invites_a_user_by_email(gateway, providers):
    # The official admin client creates a user by email; the first Google sign-in that vouches for
    # that email joins it (the same id), as automatic linking joins any user holding the email.
    admin = SyncGoTrueClient(url=gateway.url, headers={"Authorization": f"Bearer {gateway.service_role_token()}"}).admin
    email = f"invitee-{secrets.token_hex(4)}@example.com"
    invited = admin.create_user({"email": email, "email_confirm": True, "user_metadata": {"team": "blue"}}).user
    assert invited.email == email and invited.identities == [] and invited.user_metadata == {"team": "blue"}
    with pytest.raises(AuthApiError) as again:
        admin.create_user({"email": email})
    assert again.value.status == 422 and again.value.code == "email_exists"
    session = client_for(gateway).sign_in_with_id_token(
        {"provider": "google", "token": providers.google.id_token(f"google-{secrets.token_hex(6)}", email=email)}).session
    assert session.user.id == invited.id
    assert [identity.provider for identity in session.user.identities] == ["google"]


def test_id_token_errors_match_gotrue(gateway, providers):
    client = client_for(gateway)
    subject = f"google-{secrets.token_hex(6)}"
    with pytest.raises(AuthApiError) as mismatch:
        client.sign_in_with_id_token({"provider": "google", "token": providers.google.id_token(subject, raw_nonce="right"), "nonce": "wrong"})
    assert mismatch.value.status == 400 and mismatch.value.message == "Nonces mismatch"
    with pytest.raises(AuthApiError) as missing:
        client.sign_in_with_id_token({"provider": "google", "token": providers.google.id_token(subject, raw_nonce="only-in-token")})
    assert missing.value.message == "Passed nonce and nonce in id_token should either both exist or not."
    status, _, body = raw(gateway, "POST", "/token?grant_type=id_token", {"provider": "apple", "id_token": providers.google.id_token(subject)})
    assert status == 400 and body == {"error": "invalid request", "error_description": "Bad ID token"}
    # Google's SDKs hand the app an access token beside the ID token, and the official client sends
    # it: one that is not the token's (its at_hash) is refused as GoTrue refuses it.
    at_hash = base64.urlsafe_b64encode(hashlib.sha256(b"ya29.e2e-access").digest()[:16]).rstrip(b"=").decode()
    paired = providers.google.id_token(f"{subject}-paired", at_hash=at_hash)
    with pytest.raises(AuthApiError) as stray:
        client.sign_in_with_id_token({"provider": "google", "token": paired, "access_token": "ya29.another"})
    assert stray.value.status == 400 and stray.value.message == "Bad ID token"
    assert client_for(gateway).sign_in_with_id_token({"provider": "google", "token": paired, "access_token": "ya29.e2e-access"}).session
    wrong_audience = providers.apple.id_token(subject, aud="com.example.other")
    status, _, body = raw(gateway, "POST", "/token?grant_type=id_token", {"provider": "apple", "id_token": wrong_audience})
    assert status == 400 and body["error_description"] == "Unacceptable audience in id_token: [com.example.other]"
    # Single use: the same ID token cannot sign in twice.
    token = providers.apple.id_token(subject)
    assert raw(gateway, "POST", "/token?grant_type=id_token", {"provider": "apple", "id_token": token})[0] == 200
    status, _, body = raw(gateway, "POST", "/token?grant_type=id_token", {"provider": "apple", "id_token": token})
    assert status == 400 and body["error"] == "invalid request"


def test_error_shapes_and_request_hygiene(gateway):
    status, headers, body = raw(gateway, "POST", "/token?grant_type=password", {})
    assert status == 400 and body == {"code": 400, "error_code": "invalid_credentials", "msg": "unsupported_grant_type"}
    assert headers["x-sb-error-code"] == "invalid_credentials"
    status, headers, body = raw(gateway, "POST", "/token?grant_type=password", {}, {"X-Supabase-Api-Version": "2024-01-01"})
    assert body == {"code": "invalid_credentials", "message": "unsupported_grant_type"} and headers["X-Supabase-Api-Version"] == "2024-01-01"
    status, _, body = raw(gateway, "GET", "/user")
    assert status == 401 and body["error_code"] == "no_authorization"
    status, _, body = raw(gateway, "POST", "/token?grant_type=refresh_token", {"refresh_token": None, "unknown_field": 1})
    assert status == 400 and body["error_code"] == "validation_failed"
    big = {"data": {"blob": "x" * (1 << 20)}}
    status, _, body = raw(gateway, "POST", "/signup", big)
    assert status == 413 and body["error_code"] == "request_entity_too_large"
    status, _, body = raw(gateway, "GET", "/settings")
    assert status == 200 and body["external"]["apple"] is True and body["external"]["anonymous_users"] is True


def test_plain_id_token_sign_in_ignores_the_anonymous_session(gateway, providers):
    client = client_for(gateway)
    anonymous = client.sign_in_anonymously()
    subject = f"google-{secrets.token_hex(6)}"
    token = providers.google.id_token(subject, email=f"{subject}@example.com")
    # Even with the anonymous user's token in Authorization, no link_identity means no link.
    status, _, body = raw(gateway, "POST", "/token?grant_type=id_token", {"provider": "google", "id_token": token},
                          {"Authorization": f"Bearer {anonymous.session.access_token}"})
    assert status == 200
    assert body["user"]["id"] != anonymous.user.id
    assert body["user"]["is_anonymous"] is False
    # The anonymous user stays as it was.
    still = client.get_user(anonymous.session.access_token).user
    assert still.id == anonymous.user.id and still.is_anonymous is True and still.identities == []


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


# The browser's cookies: /authorize binds an implicit flow to the browser with one, and only the
# browser that sends it back to /callback gets the session.
_BROWSER_COOKIES = http.cookiejar.CookieJar()


def location_of(url: str, cookies: http.cookiejar.CookieJar = _BROWSER_COOKIES) -> tuple[int, str]:
    """What a browser (its cookies) is told by a redirect: (status, Location), without following it."""
    opener = urllib.request.build_opener(_NoRedirect, urllib.request.HTTPCookieProcessor(cookies))
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.headers.get("Location", "")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location", "")


def test_browser_flow_pkce_with_the_python_client(gateway, providers):
    """sign_in_with_oauth (PKCE) -> /authorize -> Google -> /callback -> exchange_code_for_session, as an app does it."""
    client = SyncGoTrueClient(url=gateway.url, auto_refresh_token=False, persist_session=True, flow_type="pkce")
    started = client.sign_in_with_oauth(
        {"provider": "google", "options": {"redirect_to": "http://localhost:3000/done", "query_params": {"access_type": "offline"}}})
    status, to_google = location_of(started.url)
    assert status == 302, to_google
    sent = urllib.parse.parse_qs(urllib.parse.urlsplit(to_google).query)
    assert sent["client_id"] == [GOOGLE_AUDIENCE] and sent["access_type"] == ["offline"] and sent["response_type"] == ["code"]
    assert "code_challenge" not in sent
    email = f"web-{secrets.token_hex(4)}@example.com"
    code = providers.register_google_code(sub=f"web-{secrets.token_hex(4)}", email=email, nonce=sent["nonce"][0])
    status, back = location_of(f"{gateway.url}/callback?state={sent['state'][0]}&code={urllib.parse.quote(code)}")
    assert status == 302 and back.startswith("http://localhost:3000/done?code="), back
    auth_code = urllib.parse.parse_qs(urllib.parse.urlsplit(back).query)["code"][0]
    session = client.exchange_code_for_session({"auth_code": auth_code}).session
    assert session.user.email == email
    assert client.get_user().user.id == session.user.id
    assert providers.google_token_calls[-1]["redirect_uri"] == f"{gateway.base}/auth/v1/callback"
    # The code was used: a second exchange is GoTrue's 404.
    with pytest.raises(AuthApiError) as refused:
        client.exchange_code_for_session({"auth_code": auth_code, "code_verifier": "x" * 64})
    assert refused.value.code == "flow_state_not_found"


def test_browser_flow_implicit_with_the_python_client(gateway, providers):
    """The implicit flow: the session in the fragment, read by initialize_from_url."""
    client = SyncGoTrueClient(url=gateway.url, auto_refresh_token=False, persist_session=True)
    started = client.sign_in_with_oauth({"provider": "google", "options": {"redirect_to": "http://localhost:3000/done"}})
    _, to_google = location_of(started.url)
    sent = urllib.parse.parse_qs(urllib.parse.urlsplit(to_google).query)
    email = f"imp-{secrets.token_hex(4)}@example.com"
    code = providers.register_google_code(sub=f"imp-{secrets.token_hex(4)}", email=email, nonce=sent["nonce"][0])
    status, back = location_of(f"{gateway.url}/callback?state={sent['state'][0]}&code={urllib.parse.quote(code)}")
    assert status == 302 and back.startswith("http://localhost:3000/done#access_token="), back
    client.initialize_from_url(back)
    assert client.get_user().user.email == email
    # A callback URL opened in another browser (without the flow's cookie) gives it no session.
    again = client.sign_in_with_oauth({"provider": "google", "options": {"redirect_to": "http://localhost:3000/done"}})
    _, to_google = location_of(again.url)
    sent = urllib.parse.parse_qs(urllib.parse.urlsplit(to_google).query)
    code = providers.register_google_code(sub=f"imp-{secrets.token_hex(4)}", email=email, nonce=sent["nonce"][0])
    callback = f"{gateway.url}/callback?state={sent['state'][0]}&code={urllib.parse.quote(code)}"
    status, elsewhere = location_of(callback, cookies=http.cookiejar.CookieJar())
    assert status == 302 and "error_code=bad_oauth_state" in elsewhere and "access_token" not in elsewhere, elsewhere


def test_browser_flow_link_identity_upgrades_the_anonymous_user(gateway, providers):
    """link_identity (PKCE): the anonymous user keeps its id and gains the Google identity."""
    client = SyncGoTrueClient(url=gateway.url, auto_refresh_token=False, persist_session=True, flow_type="pkce")
    anonymous = client.sign_in_anonymously().user
    started = client.link_identity({"provider": "google", "options": {"redirect_to": "http://localhost:3000/linked"}})
    sent = urllib.parse.parse_qs(urllib.parse.urlsplit(started.url).query)
    email = f"link-{secrets.token_hex(4)}@example.com"
    code = providers.register_google_code(sub=f"link-{secrets.token_hex(4)}", email=email, nonce=sent["nonce"][0])
    status, back = location_of(f"{gateway.url}/callback?state={sent['state'][0]}&code={urllib.parse.quote(code)}")
    assert status == 302 and back.startswith("http://localhost:3000/linked?code="), back
    session = client.exchange_code_for_session({"auth_code": urllib.parse.parse_qs(urllib.parse.urlsplit(back).query)["code"][0]}).session
    assert session.user.id == anonymous.id
    assert session.user.is_anonymous is False and session.user.email == email
    assert [identity.provider for identity in client.get_user_identities().identities] == ["google"]


def test_metrics_after_the_suite(gateway):
    """Runs last (pytest keeps file order): the suite's traffic shows in /metrics for every
    family, and no label holds a token. Two proxied calls (to an upstream nobody listens on) add
    the proxy's families. The gateway minted the token, so both are verified-token cache hits; a
    token it never signed is the miss, refused with 401 before any upstream is tried."""
    token = client_for(gateway).sign_in_anonymously().session.access_token

    def proxied_status(bearer):
        request = urllib.request.Request(f"{gateway.base}/api/x", headers={"Authorization": f"Bearer {bearer}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    for _ in range(2):
        status = proxied_status(token)
        assert status == 502, f"a route whose upstream does not listen must answer 502, not {status}"
    status = proxied_status("eyJhbGciOiJFUzI1NiJ9.e30.AAAAAAAAAAAAAAAAAAAAAAAA")
    assert status == 401, f"a token the gateway never signed must answer 401, not {status}"
    with urllib.request.urlopen(f"{gateway.base}/metrics", timeout=5) as response:
        text = response.read().decode()

    def total(name, *labels):
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if not line.startswith("#") and (line.startswith(name + "{") or line.startswith(name + " ")) and all(label in line for label in labels)
        )

    assert total("authgate_http_requests_total", 'route="/auth/v1/token"') > 0
    assert total("authgate_http_request_duration_seconds_count") > 0
    assert total("authgate_sign_ins_total", 'provider="apple"', 'outcome="ok"') > 0
    assert total("authgate_sign_ins_total", 'provider="google"', 'outcome="ok"') > 0
    assert total("authgate_sign_ins_total", 'outcome="nonce_mismatch"') > 0
    assert total("authgate_refresh_total", 'outcome="rotated"') > 0
    assert total("authgate_provider_keyset_fetches_total") > 0
    assert total("authgate_redis_command_duration_seconds_count") > 0
    assert "authgate_revocation_feed_lag_seconds" in text
    assert "authgate_provider_keyset_age_seconds" in text
    assert total("authgate_token_cache_lookups_total", 'result="miss"') > 0
    assert total("authgate_token_cache_lookups_total", 'result="hit"') > 0
    assert total("authgate_upstream_errors_total", 'route="api"', 'kind="connect"') > 0
    assert "eyJ" not in text, "a token in a metric"
