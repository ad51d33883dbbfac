#!/usr/bin/env python3
"""Soak driver for bench/soak/run.sh: a realistic mix against one `authgate serve`.

    soak.py prepare DIR                 writes DIR/apple-key.pem and DIR/apple-jwks.json (the fake
                                        Apple provider whose ID tokens the sign-ins present)
    soak.py serve-ws PORT               a WebSocket echo upstream (the gateway's /ws/ route)
    soak.py run --gateway URL --pid PID --admin-token T --dir DIR --minutes M --rate R

`run` first measures the mix's capacity (closed loop, 64 workers, 30 s) unless --rate is given,
then offers half of it, open loop, for M minutes. Every 10 s it samples, and prints, the
operations done, unexpected answers, p99 latency, and the gateway's resident memory and open
descriptors. It passes when nothing unexpected was answered and memory and descriptors are flat:
the last sample within 10% of the sample at two minutes. Exit status 0 on a pass, 1 otherwise.

The mix (weights): sign-in with an Apple ID token and nonce (new and returning users) 8, refresh
14, GET /user 18, PUT /user 5, proxied GET 28, proxied POST with a 16 KiB body 10, WebSocket
session (3 echoes) 3, logout then the dead token refused 5, admin calls (list users, show user,
a user's sessions, revoke a session) 4, anonymous sign-up 5.
"""
import argparse
import asyncio
import base64
import hashlib
import json
import os
import random
import secrets
import sys
import time

import aiohttp
import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

AUDIENCE = "com.example.authgate.soak"
APPLE_KID = "soak-apple"


def b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def prepare(directory: str) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with open(os.path.join(directory, "apple-key.pem"), "wb") as handle:
        handle.write(pem)
    numbers = key.public_key().public_numbers()
    jwks = {"keys": [{"kty": "RSA", "kid": APPLE_KID, "use": "sig", "alg": "RS256", "n": b64(numbers.n), "e": b64(numbers.e)}]}
    with open(os.path.join(directory, "apple-jwks.json"), "w") as handle:
        json.dump(jwks, handle)


async def serve_ws(port: int) -> None:
    async def echo(request):
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        async for message in socket:
            if message.type == aiohttp.WSMsgType.TEXT:
                await socket.send_str(message.data)
            elif message.type == aiohttp.WSMsgType.BINARY:
                await socket.send_bytes(message.data)
        return socket

    app = web.Application()
    app.router.add_get("/{tail:.*}", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    await asyncio.Event().wait()


class Unexpected(Exception):
    """An answer the mix did not expect: counted, and the soak fails."""


class Soak:
    def __init__(self, args):
        self.base = args.gateway.rstrip("/")
        self.pid = args.pid
        self.admin = args.admin_token
        with open(os.path.join(args.dir, "apple-key.pem"), "rb") as handle:
            self.apple_key = handle.read()
        self.sessions = []          # sessions nobody is using: (access, refresh, user id)
        self.subjects = []          # Apple subjects that signed in before
        self.latencies = []
        self.operations = 0
        self.unexpected = []
        self.body = os.urandom(16 << 10)
        self.weights = [
            (self.sign_in, 8), (self.refresh, 14), (self.get_user, 18), (self.put_user, 5), (self.proxy_get, 28),
            (self.proxy_post, 10), (self.websocket, 3), (self.logout, 5), (self.admin_calls, 4), (self.sign_up, 5),
        ]

    # Sessions are checked out while an operation uses them, so no two operations race on one.
    def take(self):
        return self.sessions.pop(random.randrange(len(self.sessions))) if self.sessions else None

    def give(self, session):
        self.sessions.append(session)
        if len(self.sessions) > 2000:
            self.sessions.pop(0)

    async def call(self, method, path, expected, token=None, body=None, data=None, headers=None):
        all_headers = {"apikey": "soak", **(headers or {})}
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        async with self.http.request(method, self.base + path, json=body, data=data, headers=all_headers) as response:
            payload = await response.read()
            if response.status not in expected:
                raise Unexpected(f"{method} {path.split('?')[0]}: {response.status} {payload[:160]!r}")
            if response.headers.get("Content-Type", "").startswith("application/json") and payload:
                return response.status, json.loads(payload)
            return response.status, None

    def id_token(self, subject, nonce):
        now = int(time.time())
        claims = {"iss": "https://appleid.apple.com", "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 600,
                  "nonce": hashlib.sha256(nonce.encode()).hexdigest(), "email": f"{subject}@privaterelay.appleid.com",
                  "email_verified": True, "is_private_email": True, "jti": secrets.token_hex(8)}
        return jwt.encode(claims, self.apple_key, algorithm="RS256", headers={"kid": APPLE_KID})

    def keep(self, answer):
        self.give((answer["access_token"], answer["refresh_token"], answer["user"]["id"]))

    async def sign_in(self):
        returning = self.subjects and random.random() < 0.5
        subject = random.choice(self.subjects) if returning else f"soak.{secrets.token_hex(8)}"
        nonce = secrets.token_urlsafe(16)
        _, answer = await self.call("POST", "/auth/v1/token?grant_type=id_token", {200},
                                    body={"provider": "apple", "id_token": self.id_token(subject, nonce), "nonce": nonce})
        if not returning:
            self.subjects.append(subject)
        self.keep(answer)

    async def sign_up(self):
        _, answer = await self.call("POST", "/auth/v1/signup", {200}, body={"data": {"plan": "soak"}})
        self.keep(answer)

    async def refresh(self):
        session = self.take()
        if not session:
            return await self.sign_up()
        _, answer = await self.call("POST", "/auth/v1/token?grant_type=refresh_token", {200}, body={"refresh_token": session[1]})
        self.keep(answer)

    async def with_session(self, action):
        session = self.take()
        if not session:
            return await self.sign_up()
        try:
            await action(session)
        finally:
            self.give(session)

    async def get_user(self):
        await self.with_session(lambda s: self.call("GET", "/auth/v1/user", {200}, token=s[0]))

    async def put_user(self):
        await self.with_session(lambda s: self.call("PUT", "/auth/v1/user", {200}, token=s[0], body={"data": {"n": random.randrange(1000)}}))

    async def proxy_get(self):
        await self.with_session(lambda s: self.call("GET", f"/api/items/{random.randrange(100)}?q=1", {200}, token=s[0]))

    async def proxy_post(self):
        await self.with_session(lambda s: self.call("POST", "/api/upload", {200}, token=s[0], data=self.body,
                                                    headers={"Content-Type": "application/octet-stream"}))

    async def websocket(self):
        async def session(s):
            async with self.http.ws_connect(self.base + "/ws/echo", headers={"Authorization": f"Bearer {s[0]}"}) as socket:
                for index in range(3):
                    await socket.send_str(f"message {index}")
                    message = await socket.receive(timeout=10)
                    if message.type != aiohttp.WSMsgType.TEXT or message.data != f"message {index}":
                        raise Unexpected(f"websocket echo: {message.type} {str(message.data)[:80]}")
        await self.with_session(session)

    async def logout(self):
        session = self.take()
        if not session:
            return await self.sign_up()
        await self.call("POST", "/auth/v1/logout?scope=local", {204}, token=session[0])
        await self.refused(session[0])

    async def refused(self, token):
        """An ended session's token is refused by the proxy once the revocation reaches its view
        (milliseconds; a 200 before that is not an error, still passing after 3 s is)."""
        deadline = time.monotonic() + 3
        while True:
            status, _ = await self.call("GET", "/api/after-revocation", {200, 401}, token=token)
            if status == 401:
                return
            if time.monotonic() > deadline:
                raise Unexpected("a revoked session's token still passed the proxy after 3 s")
            await asyncio.sleep(0.02)

    async def admin_calls(self):
        await self.call("GET", "/auth/v1/admin/users?page=1&per_page=10", {200}, token=self.admin)
        session = self.take()
        if not session:
            return
        await self.call("GET", f"/auth/v1/admin/users/{session[2]}", {200}, token=self.admin)
        _, listed = await self.call("GET", f"/auth/v1/admin/users/{session[2]}/sessions", {200}, token=self.admin)
        ids = [entry["id"] for entry in (listed or {}).get("sessions", [])]
        held = jwt.decode(session[0], options={"verify_signature": False}).get("session_id")
        if held not in ids:
            raise Unexpected(f"admin: the session held ({held}) is missing from its user's sessions")
        if random.random() < 0.5:
            # An operator ends the session held here (no other operation is using it), and the
            # gateway refuses its token from then on.
            await self.call("DELETE", f"/auth/v1/admin/sessions/{held}", {200}, token=self.admin)
            await self.refused(session[0])
        else:
            self.give(session)

    async def one(self):
        operation = random.choices([op for op, _ in self.weights], weights=[w for _, w in self.weights])[0]
        start = time.monotonic()
        try:
            await operation()
        except Unexpected as error:
            self.unexpected.append(str(error))
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as error:
            self.unexpected.append(f"{operation.__name__}: {type(error).__name__}: {error}")
        self.latencies.append(time.monotonic() - start)
        self.operations += 1

    def resident_kib(self):
        with open(f"/proc/{self.pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def descriptors(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    async def capacity(self, seconds=30, workers=64):
        deadline = time.monotonic() + seconds
        start_ops = self.operations

        async def worker():
            while time.monotonic() < deadline:
                await self.one()
        await asyncio.gather(*(worker() for _ in range(workers)))
        return (self.operations - start_ops) / seconds

    async def run(self, minutes, rate):
        connector = aiohttp.TCPConnector(limit=256, limit_per_host=256)
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as self.http:
            for _ in range(200):
                await self.sign_up()
            if not rate:
                measured = await self.capacity()
                rate = measured / 2
                print(f"capacity of the mix (64 workers, 30 s): {measured:.0f} operations/s; offering half: {rate:.0f}/s", flush=True)
                if self.unexpected:
                    # At saturation the generator's own 30 s timeout may fire; that phase only
                    # measures. The soak itself counts from here.
                    print(f"  (while measuring: {len(self.unexpected)} unexpected, first: {self.unexpected[0]})", flush=True)
                self.unexpected.clear()
            self.latencies.clear()
            print(f"{'elapsed':>8} {'ops':>8} {'ops/s':>7} {'unexpected':>10} {'p99 ms':>8} {'RSS MiB':>8} {'fds':>5}", flush=True)
            samples = []
            pending = set()
            start = time.monotonic()
            next_sample = start + 10
            interval = 1 / rate
            scheduled = start
            window_ops = self.operations
            while time.monotonic() - start < minutes * 60:
                now = time.monotonic()
                while scheduled <= now:
                    if len(pending) < 2048:
                        task = asyncio.create_task(self.one())
                        pending.add(task)
                        task.add_done_callback(pending.discard)
                    else:
                        self.unexpected.append("the load generator fell behind (2048 operations pending)")
                    scheduled += interval
                if now >= next_sample:
                    latencies = sorted(self.latencies)
                    self.latencies.clear()
                    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000 if latencies else 0
                    sample = (round(now - start), self.operations, (self.operations - window_ops) / 10, len(self.unexpected), p99,
                              self.resident_kib() / 1024, self.descriptors())
                    window_ops = self.operations
                    samples.append(sample)
                    print(f"{sample[0]:>7}s {sample[1]:>8} {sample[2]:>7.0f} {sample[3]:>10} {sample[4]:>8.1f} {sample[5]:>8.1f} {sample[6]:>5}", flush=True)
                    next_sample += 10
                await asyncio.sleep(min(interval, max(0, next_sample - time.monotonic()), 0.005))
            await asyncio.gather(*pending)
        return samples, rate


def verdict(samples, unexpected):
    """Zero unexpected answers; resident memory: the last sample within 10% of the sample at two
    minutes; descriptors: the same, but each side is the lowest of its minute's six samples, since
    one sample also counts the client and upstream connections in flight at that instant (they
    come and go by tens at this load) while a leak raises the floor."""
    at_two = next((s for s in samples if s[0] >= 120), samples[0] if samples else None)
    last = samples[-1] if samples else None
    problems = []
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected answers, first: " + "; ".join(unexpected[:5]))
    if at_two and last:
        if last[5] > at_two[5] * 1.10:
            problems.append(f"resident memory grew from {at_two[5]:.1f} MiB at {at_two[0]} s to {last[5]:.1f} MiB")
        minute_two = [s[6] for s in samples if at_two[0] - 60 < s[0] <= at_two[0]]
        last_minute = [s[6] for s in samples[-6:]]
        if min(last_minute) > min(minute_two) * 1.10:
            problems.append(f"open descriptors' floor grew from {min(minute_two)} (minute ending at {at_two[0]} s) to {min(last_minute)} (last minute)")
    return problems


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir")
    w = sub.add_parser("serve-ws")
    w.add_argument("port", type=int)
    r = sub.add_parser("run")
    r.add_argument("--gateway", required=True)
    r.add_argument("--pid", type=int, required=True)
    r.add_argument("--admin-token", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--minutes", type=float, default=10)
    r.add_argument("--rate", type=float, default=0)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.dir)
    elif args.command == "serve-ws":
        asyncio.run(serve_ws(args.port))
    else:
        soak = Soak(args)
        samples, rate = asyncio.run(soak.run(args.minutes, args.rate))
        problems = verdict(samples, soak.unexpected)
        print(f"offered {rate:.0f} operations/s for {args.minutes:g} min: {soak.operations} operations, {len(soak.unexpected)} unexpected")
        if problems:
            print("FAIL: " + " | ".join(problems))
            sys.exit(1)
        print("PASS: no unexpected answers; memory and descriptors flat (within 10% of the 2-minute sample; descriptors by each minute's floor)")


if __name__ == "__main__":
    main()
