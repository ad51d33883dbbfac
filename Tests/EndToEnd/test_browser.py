"""A real browser (Chromium, headless) against AuthGate.

- A WebSocket through the edge proxy: a page cannot set `Authorization` on a WebSocket handshake;
  it offers its access token as the subprotocol `authgate.bearer.<token>` beside `authgate`, as
  docs/web-clients.md tells web developers to. The page is served by an app behind the gateway
  (a public route), opens `/ws/echo` (a required route) and reports what happened by navigating
  to `/page/result`, which the app records: the test waits for that report.
- The implicit browser sign-in over TLS: `/authorize` sets the `__Host-` flow cookie, the browser
  goes to a fake Google (another site) and back to `/callback`, which gives the session only to
  the browser that sends the cookie back; the page the flow ends on reports the URL fragment.
"""

import base64
import hashlib
import json
import os
import queue
import secrets
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from supabase_auth import SyncGoTrueClient

from conftest import Gateway

# Where the browser flow ends: the session is in the URL's fragment, reported as it came.
DONE_PAGE = """<!doctype html>
<title>Signed in</title>
<script>location.href = "/page/result?" + new URLSearchParams({fragment: location.hash.slice(1), query: location.search.slice(1)});</script>
"""

PAGE = """<!doctype html>
<title>AuthGate WebSocket</title>
<script>
const token = new URLSearchParams(location.hash.slice(1)).get("token");
const protocols = token ? ["authgate", "authgate.bearer." + token] : ["authgate"];
let reported = false;
function report(fields) {
  if (reported) return;
  reported = true;
  location.href = "/page/result?" + new URLSearchParams(fields);
}
const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/echo", protocols);
socket.onopen = () => socket.send("hello from the page");
socket.onmessage = (event) => report({outcome: "message", protocol: socket.protocol, data: event.data});
socket.onclose = (event) => report({outcome: "closed", code: String(event.code)});
</script>
"""

WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class App:
    """The application behind the gateway: the page, the page's reports, and a WebSocket endpoint
    that chooses no subprotocol and answers the first message with what its handshake carried."""

    def __init__(self):
        self.reports: queue.Queue = queue.Queue()
        self.handshakes: list[dict] = []
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path)
                if path.path == "/page/ws.html":
                    self.answer(200, "text/html", PAGE.encode())
                elif path.path == "/page/done":
                    self.answer(200, "text/html", DONE_PAGE.encode())
                elif path.path == "/page/result":
                    app.reports.put({key: values[0] for key, values in urllib.parse.parse_qs(path.query).items()})
                    self.answer(200, "text/plain", b"reported")
                elif path.path == "/ws/echo" and self.headers.get("Upgrade", "").lower() == "websocket":
                    self.websocket()
                else:
                    self.answer(404, "text/plain", b"not found")

            def answer(self, status: int, content_type: str, body: bytes):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def websocket(self):
                headers = {name.lower(): value for name, value in self.headers.items()}
                app.handshakes.append(headers)
                accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + WEBSOCKET_GUID).encode()).digest()).decode()
                self.wfile.write(
                    f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n".encode())
                self.wfile.flush()
                message = self.read_text_frame()
                reply = json.dumps({
                    "user": headers.get("x-authgate-user-id"), "protocol": headers.get("sec-websocket-protocol"),
                    "authorization": "authorization" in headers, "echo": message,
                }).encode()
                self.wfile.write(bytes([0x81, 126]) + struct.pack("!H", len(reply)) + reply)
                self.wfile.write(bytes([0x88, 2, 0x03, 0xE8]))  # close, 1000
                self.wfile.flush()
                self.close_connection = True

            def read_text_frame(self) -> str:
                first, second = self.rfile.read(2)
                length = second & 0x7F
                if length == 126:
                    length = struct.unpack("!H", self.rfile.read(2))[0]
                elif length == 127:
                    length = struct.unpack("!Q", self.rfile.read(8))[0]
                mask = self.rfile.read(4)
                payload = bytes(byte ^ mask[index % 4] for index, byte in enumerate(self.rfile.read(length)))
                assert first == 0x81 and second & 0x80, "a masked text frame from the browser"
                return payload.decode()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def app():
    instance = App()
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def edge(providers, app):
    upstream = f"http://127.0.0.1:{app.port}"
    instance = Gateway(providers, reuse_interval="2s", routes=[
        {"name": "page", "path_prefix": "/page/", "upstreams": [upstream], "auth": "public"},
        {"name": "ws", "path_prefix": "/ws/", "upstreams": [upstream], "auth": "required", "allow_anonymous": True},
    ])
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def tls_edge(providers, app):
    """A gateway serving TLS, whose browser flow sends browsers to the fake Google's sign-in page
    and back to an `https` callback, ending on the app's page."""
    instance = Gateway(providers, reuse_interval="2s", tls=True, browser_flow={
        "google": {"authorize_url": f"http://127.0.0.1:{providers.port}/google/auth"},
        "redirect_urls": [f"http://127.0.0.1:{app.port}/page/**"],
    }, routes=[{"name": "page", "path_prefix": "/page/", "upstreams": [f"http://127.0.0.1:{app.port}"], "auth": "public"}],
        callback_over_tls=True)
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def tls_ws_edge(providers, app):
    """The WebSocket routes behind a gateway serving TLS: the browser loads the page over HTTP/2
    (ALPN `h2`) and opens its WebSocket on that connection (RFC 8441)."""
    upstream = f"http://127.0.0.1:{app.port}"
    instance = Gateway(providers, reuse_interval="2s", tls=True, routes=[
        {"name": "page", "path_prefix": "/page/", "upstreams": [upstream], "auth": "public"},
        {"name": "ws", "path_prefix": "/ws/", "upstreams": [upstream], "auth": "required", "allow_anonymous": True},
    ])
    yield instance
    instance.close()


def browse(url: str, app: App) -> dict:
    """Opens `url` in a fresh headless Chromium and returns what the page reported. The browser
    accepts the test CA's certificates (it is not in Chromium's trust store)."""
    profile = tempfile.mkdtemp(prefix="authgate-chromium-")
    log = open(os.path.join(profile, "chromium.log"), "w")
    browser = subprocess.Popen(
        ["chromium-headless-shell", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--ignore-certificate-errors",
         f"--user-data-dir={profile}", url],
        stdout=log, stderr=log, start_new_session=True)
    try:
        return app.reports.get(timeout=60)
    except queue.Empty:
        log.flush()
        raise AssertionError("the page reported nothing:\n" + open(os.path.join(profile, "chromium.log")).read()[-4000:])
    finally:
        stop_process_group(browser)
        log.close()
        shutil.rmtree(profile)


def stop_process_group(process: subprocess.Popen) -> None:
    """Kills `process` and every process it started (its session's process group: Chromium's
    zygote, GPU and renderer processes) and waits until none of them runs, so that none writes
    into the profile after it is removed (a renderer outliving the browser left a `Default`
    folder behind in every run)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    deadline = time.monotonic() + 30
    while live_members(process.pid):
        assert time.monotonic() < deadline, f"processes of group {process.pid} still run after SIGKILL"
        time.sleep(0.01)


def live_members(group: int) -> list[int]:
    """The processes of process group `group` that still run (a zombie, which writes nothing, does
    not count: its new parent may reap it late)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command's closing parenthesis: state, parent, process group.
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(entry))
    return members


def test_a_browser_opens_a_websocket_with_its_access_token_as_a_subprotocol(edge, app):
    client = SyncGoTrueClient(url=edge.url, auto_refresh_token=False, persist_session=True)
    session = client.sign_in_anonymously().session
    report = browse(f"{edge.base}/page/ws.html#token={session.access_token}", app)
    assert report["outcome"] == "message", report
    assert report["protocol"] == "authgate", "the browser accepted the 101 that names authgate"
    seen = json.loads(report["data"])
    assert seen == {"user": session.user.id, "protocol": None, "authorization": False, "echo": "hello from the page"}, seen

    # Signed out: the same token opens nothing, and the app sees no handshake.
    client.sign_out({"scope": "global"})
    handshakes = len(app.handshakes)
    report = browse(f"{edge.base}/page/ws.html#token={session.access_token}", app)
    assert report == {"outcome": "closed", "code": "1006"}, report
    assert len(app.handshakes) == handshakes


def test_a_browser_opens_a_websocket_over_http2(tls_ws_edge, app):
    """Chromium loads the page over HTTP/2 and, seeing SETTINGS_ENABLE_CONNECT_PROTOCOL, opens the
    WebSocket as an extended CONNECT on a stream of that connection; the app behind the gateway
    gets an HTTP/1.1 handshake with the caller's identity, as from any other client."""
    request = urllib.request.Request(f"{tls_ws_edge.url}/signup", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10, context=tls_ws_edge.ssl_context()) as response:
        session = json.load(response)
    report = browse(f"{tls_ws_edge.base}/page/ws.html#token={session['access_token']}", app)
    assert report["outcome"] == "message", report
    assert report["protocol"] == "authgate", report
    seen = json.loads(report["data"])
    assert seen == {"user": session["user"]["id"], "protocol": None, "authorization": False, "echo": "hello from the page"}, seen
    # The gateway writes its log lines off the request path: wait for the tunnel's.
    deadline = time.monotonic() + 10
    while True:
        log = tls_ws_edge.log_text()
        opened = [json.loads(line) for line in log.splitlines() if '"websocket opened"' in line]
        if opened or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [entry.get("gw.http_version") for entry in opened] == ["2"], log[-3000:]


def test_a_browser_without_a_token_is_refused(edge, app):
    handshakes = len(app.handshakes)
    report = browse(f"{edge.base}/page/ws.html", app)
    assert report == {"outcome": "closed", "code": "1006"}, report
    assert len(app.handshakes) == handshakes


def test_a_browser_signs_in_with_the_implicit_flow_over_tls(tls_edge, app, providers):
    """The `__Host-` flow cookie survives a real browser's round trip through another site."""
    providers.next_google_sub = f"chromium-{secrets.token_hex(4)}"
    redirect_to = urllib.parse.quote(f"http://127.0.0.1:{app.port}/page/done", safe="")
    report = browse(f"{tls_edge.url}/authorize?provider=google&redirect_to={redirect_to}", app)
    fragment = dict(urllib.parse.parse_qsl(report["fragment"]))
    assert "access_token" in fragment, report
    assert fragment["token_type"] == "bearer" and fragment["refresh_token"], report
    request = urllib.request.Request(f"{tls_edge.url}/user", headers={"Authorization": f"Bearer {fragment['access_token']}"})
    with urllib.request.urlopen(request, timeout=10, context=tls_edge.ssl_context()) as response:
        user = json.load(response)
    assert user["email"] == f"{providers.next_google_sub}@example.com"
    assert user["app_metadata"]["provider"] == "google"
