"""A merchant's N001 endpoint built on iPayNow's official Python SDK (ipaynow-python-sdk 1.0.0).

Usage: python ipaynow_receiver.py <appId> <appKey>
  Serves on 127.0.0.1 (a free port) and prints its URL as the first line. Each POST body is read as
  received and checked with the SDK:
    - parser.parse_response(body), then signer.verify(fields, cfg, "signature", exclude_sign_type) with
      exclude_sign_type True when the message has no "version" (the legacy / cross-border shape, whose
      signature leaves signType out) and False when it has one (the 1.0.0 shape);
    - NotifyParser.parse_payment and NotifyParser.parse_refund, each verdict recorded.
  The answer is NotifyAck.success() ("success=Y") when verify accepted the signature, NotifyAck.fail()
  otherwise, HTTP 200 with text/plain.
  When standard input closes it prints {"requests": [{"method", "path", "contentType", "bodyBase64",
  "legacyShape", "verify", "payment", "refund", "ack"}, ...]} (arrival order) and exits.

The SDK has no entry point for the legacy N001 (parse_payment signs signType, parse_refund reads the
refund status), so the endpoint calls its verify directly for that shape, as the SDK's signer allows.
"""
import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ipaynow_sdk import IpaynowConfig, IpaynowError, NotifyAck, NotifyParser
from ipaynow_sdk.parser import parse_response
from ipaynow_sdk.signer import verify


def entry_point(parse, body, cfg):
    try:
        response = parse(body, cfg)
    except IpaynowError as error:
        return {"accepted": False, "error": error.code.value}
    return {"accepted": True, "isSuccess": bool(response.is_success())}


def main():
    cfg = IpaynowConfig(sys.argv[1], sys.argv[2])
    received = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = raw.decode("utf-8", errors="replace")
            fields = parse_response(body)
            legacy = not fields.get("version")
            ok = bool(verify(fields, cfg, "signature", legacy))
            ack = NotifyAck.success() if ok else NotifyAck.fail()
            with lock:
                received.append({"method": self.command, "path": self.path,
                                 "contentType": self.headers.get("Content-Type"),
                                 "bodyBase64": base64.b64encode(raw).decode("ascii"),
                                 "legacyShape": legacy, "verify": ok,
                                 "payment": entry_point(NotifyParser.parse_payment, body, cfg),
                                 "refund": entry_point(NotifyParser.parse_refund, body, cfg),
                                 "ack": ack})
            answer = ack.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print("http://127.0.0.1:%d/notify/ipaynow" % server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()
    with lock:
        json.dump({"requests": received}, sys.stdout, ensure_ascii=False)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
