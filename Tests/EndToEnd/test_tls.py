"""The official Python client over TLS 1.2 and 1.3, and over HTTP/2, against AuthGate's own listener."""

import ssl

import httpx
import pytest
from supabase_auth import SyncGoTrueClient


def client_over(gateway, http_client: httpx.Client) -> SyncGoTrueClient:
    return SyncGoTrueClient(url=gateway.url, auto_refresh_token=False, persist_session=True, http_client=http_client)


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_sign_in_refresh_and_sign_out_over_tls(tls_gateway, version):
    seen = []
    http_client = httpx.Client(
        verify=tls_gateway.ssl_context(minimum=version, maximum=version),
        event_hooks={"response": [lambda response: seen.append(response.extensions["network_stream"].get_extra_info("ssl_object").version())]},
    )
    client = client_over(tls_gateway, http_client)
    session = client.sign_in_anonymously().session
    assert client.get_user().user.id == session.user.id
    refreshed = client.refresh_session(session.refresh_token)
    assert refreshed.session.refresh_token != session.refresh_token
    client.sign_out()
    expected = {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
    assert seen and set(seen) == {expected}


def test_official_client_over_http2(tls_gateway):
    versions = []
    http_client = httpx.Client(http2=True, verify=tls_gateway.ssl_context(), event_hooks={"response": [lambda r: versions.append(r.http_version)]})
    client = client_over(tls_gateway, http_client)
    session = client.sign_in_anonymously({"options": {"data": {"via": "h2"}}}).session
    user = client.get_user().user
    assert user.id == session.user.id and user.user_metadata == {"via": "h2"}
    client.update_user({"data": {"via": "h2", "again": True}})
    assert client.get_user().user.user_metadata == {"via": "h2", "again": True}
    client.sign_out()
    assert versions and set(versions) == {"HTTP/2"}


def test_a_client_that_does_not_trust_the_ca_is_refused(tls_gateway):
    with pytest.raises(httpx.ConnectError):
        httpx.Client(verify=ssl.create_default_context()).get(f"{tls_gateway.url}/health")
