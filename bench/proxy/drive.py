#!/usr/bin/env python3
"""Sends COUNT requests one after another on one kept-alive connection and reads each answer.

usage: drive.py PORT TOKEN ROW COUNT
  ROW get:    GET /api/x with the token
  ROW upload: POST /api/x with the token and a 64 KiB body in 64 chunks of 1 KiB (chunked)
Prints "answers,non-200". For bench/proxy/instructions.sh, whose gateway runs under valgrind: the
client's own speed does not matter, only that every request is sent and answered.
"""
import socket
import sys


def request(row: str, token: str) -> bytes:
    head = f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
    if row == "get":
        return f"GET /api/x HTTP/1.1\r\n{head}\r\n".encode()
    if row == "upload":
        chunk = b"400\r\n" + b"u" * 1024 + b"\r\n"
        return f"POST /api/x HTTP/1.1\r\n{head}Transfer-Encoding: chunked\r\n\r\n".encode() + chunk * 64 + b"0\r\n\r\n"
    raise SystemExit(f"unknown row {row}")


def read_answer(connection: socket.socket, buffered: bytes) -> tuple[int, bytes]:
    while b"\r\n\r\n" not in buffered:
        data = connection.recv(65536)
        if not data:
            raise SystemExit("the gateway closed the connection")
        buffered += data
    head, _, rest = buffered.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ")[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
        if name.strip().lower() == b"transfer-encoding":
            raise SystemExit("a chunked answer: not expected from the bench upstream")
    while len(rest) < length:
        data = connection.recv(65536)
        if not data:
            raise SystemExit("the gateway closed the connection mid-answer")
        rest += data
    return status, rest[length:]


def main() -> None:
    port, token, row, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    message = request(row, token)
    connection = socket.create_connection(("127.0.0.1", port))
    buffered, failures = b"", 0
    for _ in range(count):
        connection.sendall(message)
        status, buffered = read_answer(connection, buffered)
        failures += status != 200
    connection.close()
    print(f"{count},{failures}")


if __name__ == "__main__":
    main()
