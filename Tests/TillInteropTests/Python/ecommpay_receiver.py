"""A merchant's callback endpoint built on ecommpay's official Python SDK (PyPI ecommpay-sdk 1.0.6).

Usage: python ecommpay_receiver.py <secret>
  Serves on 127.0.0.1 (a free port) and prints its URL as the first line. Each POST body is read as
  received and handed, as text, to Gate(secret).handle_callback. The answer follows the official
  WooCommerce plugin's EcpCallbacksHandler (the one vendor source on acknowledging): HTTP 200 "OK" when
  the SDK accepted the callback, HTTP 400 when it raised.
  When standard input closes it prints {"requests": [{"method", "path", "contentType", "bodyBase64",
  "accepted", "error", "paymentId", "paymentStatus", "amount", "status"}, ...]} (arrival order) and exits.
"""
import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from payment_page_sdk.gate import Gate


def text(value):
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def main():
    gate = Gate(sys.argv[1])
    received = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            record = {"method": self.command, "path": self.path, "contentType": self.headers.get("Content-Type"),
                      "bodyBase64": base64.b64encode(raw).decode("ascii")}
            try:
                callback = gate.handle_callback(raw.decode("utf-8"))
                record.update({"accepted": True, "paymentId": text(callback.get_payment_id()),
                               "paymentStatus": text(callback.get_payment_status()),
                               "amount": text(callback.get_value("payment.sum.amount"))})
                status, answer = 200, b"OK"
            except Exception as error:
                record.update({"accepted": False, "error": "%s: %s" % (type(error).__name__, error)})
                status, answer = 400, b"Bad signature"
            record["status"] = status
            with lock:
                received.append(record)
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print("http://127.0.0.1:%d/notify/ecommpay" % server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()
    with lock:
        json.dump({"requests": received}, sys.stdout, ensure_ascii=False)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
