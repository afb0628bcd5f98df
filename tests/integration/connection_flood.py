"""A flood of idle connections, run as its own process (it raises its own descriptor
limit, which a test must not do to the test process):

    python -m tests.integration.connection_flood PORT COUNT http|https

Opens COUNT connections to 127.0.0.1:PORT and leaves them idle (for https, they never
start the handshake), then, once they are made, times GET /livez on fresh connections
while they are held.
Prints one JSON line: how many connected, the probes' statuses and seconds.
"""

from __future__ import annotations

import http.client
import json
import resource
import selectors
import socket
import ssl
import sys
import time


def probe(port: int, scheme: str) -> tuple[int | str, float]:
    start = time.monotonic()
    connection: http.client.HTTPConnection
    if scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
    else:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/livez")
        status: int | str = connection.getresponse().status
    except OSError as exc:
        status = f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
    return status, time.monotonic() - start


def flood(port: int, count: int, scheme: str, probes: int = 5) -> dict[str, object]:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if hard != resource.RLIM_INFINITY and hard < wanted:
        return {"skip": f"this process may open only {hard} descriptors, {wanted} needed"}
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    selector = selectors.DefaultSelector()
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_WRITE)
        sockets.append(sock)
    connected = 0
    deadline = time.monotonic() + 8
    while connected < count and time.monotonic() < deadline:
        for key, _ in selector.select(0.2):
            selector.unregister(key.fileobj)
            connected += 1
    # A storm of 3,000 simultaneous connects overflows any listen queue for a moment (the
    # kernel drops SYNs, clients resend them a second later, whoever listens): probe
    # once the connections are made and held, not during the storm.
    time.sleep(1.0)
    results = []
    for _ in range(probes):
        results.append(probe(port, scheme))
        time.sleep(0.2)
    for sock in sockets:
        sock.close()
    return {
        "connected": connected,
        "statuses": [status for status, _ in results],
        "seconds": [round(seconds, 3) for _, seconds in results],
    }


if __name__ == "__main__":
    port, count, scheme = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    print(json.dumps(flood(port, count, scheme)), flush=True)
