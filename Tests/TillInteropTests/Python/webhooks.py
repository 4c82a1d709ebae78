"""Webhooks through the official SDK's helper, and a local endpoint that receives them.

Usage: python webhooks.py verify   stdin {"secrets": {"<key id>": "<secret key>"},
                                          "deliveries": [{"bodyBase64": ..., "headers": [["X-GCS-Signature", ...], ...]}]}
         -> {"results": [{"ok": true, "eventId": ..., "type": ..., "apiVersion": ..., "merchantId": ...}
                         | {"ok": false, "error": "<exception class>: <message>"}, ...]}
       Each body is handed to WebhooksHelper.unmarshal as bytes, exactly as received.

       python webhooks.py receive
         Serves on 127.0.0.1 (a free port) and prints its URL as the first line. A GET carrying
         X-GCS-Webhooks-Endpoint-Verification is answered with that value as a text/plain body (the
         endpoint verification of the Connect webhook documentation); anything else gets 200 "OK".
         When standard input closes it prints {"requests": [{"method", "path", "headers": [[name, value], ...],
         "bodyBase64"}, ...]} (every request, in arrival order, raw bytes) and exits.
"""
import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from worldline.connect.sdk.communication.request_header import RequestHeader
from worldline.connect.sdk.webhooks.in_memory_secret_key_store import InMemorySecretKeyStore
from worldline.connect.sdk.webhooks.webhooks import Webhooks


def verify(request):
    store = InMemorySecretKeyStore.instance()
    store.clear()
    for key_id, secret in request["secrets"].items():
        store.store_secret_key(key_id, secret)
    helper = Webhooks.v1().create_helper(store)
    results = []
    for delivery in request["deliveries"]:
        body = base64.b64decode(delivery["bodyBase64"])
        headers = [RequestHeader(name, value) for name, value in delivery["headers"]]
        try:
            event = helper.unmarshal(body, headers)
            results.append({"ok": True, "eventId": event.id, "type": event.type, "apiVersion": event.api_version,
                            "merchantId": event.merchant_id})
        except Exception as error:  # every failure is an answer: the test decides what it means
            results.append({"ok": False, "error": "%s: %s" % (type(error).__name__, error)})
    json.dump({"results": results}, sys.stdout)


def receive():
    received = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with lock:
                received.append({"method": self.command, "path": self.path,
                                 "headers": [[name, value] for name, value in self.headers.items()],
                                 "bodyBase64": base64.b64encode(body).decode("ascii")})
            challenge = self.headers.get("X-GCS-Webhooks-Endpoint-Verification")
            answer = challenge.encode("utf-8") if (self.command == "GET" and challenge is not None) else b"OK"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        do_GET = handle_any
        do_POST = handle_any
        do_PUT = handle_any

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print("http://127.0.0.1:%d/webhooks" % server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()
    with lock:
        json.dump({"requests": received}, sys.stdout)
    sys.stdout.flush()


def main():
    command = sys.argv[1]
    if command == "verify":
        verify(json.load(sys.stdin))
    elif command == "receive":
        receive()
    else:
        raise SystemExit("unknown command " + command)


if __name__ == "__main__":
    main()
