"""ecommpay's official Python SDK (PyPI ecommpay-sdk 1.0.6, package payment_page_sdk) as the other party.

One call per run: a JSON object on standard input, a JSON object on standard output. Every operation is a
batch ("items"), so one test starts the interpreter once. The SDK is only called, never re-implemented: the
signature is SignatureHandler.sign, the check Gate.handle_callback (Callback), the URL
Gate.get_purchase_payment_page_url. "string" is the SDK's own leaves (its private __get_params_to_sign)
joined as its sign() joins them, for reading a mismatch; the tests compare signatures.

Usage: python ecommpay_bridge.py   stdin {"op": ..., "items": [...]}

  op "sign"      items [{"secret", "json": "<JSON object text>"}]
                 -> {"results": [{"string", "signature": SignatureHandler(secret).sign(json.loads(json))}]}
  op "callback"  items [{"secret", "body": "<the body as received>"}]
                 Gate(secret).handle_callback(body)
                 -> {"results": [{"accepted": true, "paymentId", "paymentStatus", "amount", "signature"}
                                 | {"accepted": false, "error": "<message>", "errorType": "ProcessException" | ...}]}
                 (paymentId, paymentStatus and amount are the Callback's getters, as text, or null)
  op "build"     items [{"secret", "json": "<object without a signature>", "place": "signature" | "general",
                         "tamper": [["a.b", "<JSON value>"], ...], "ensureAscii": bool, "indent": int | null}]
                 a callback as the SDK signs one: SignatureHandler(secret).sign(object) put at the top-level
                 "signature" or at "general.signature", then each tamper path set to its value (after signing),
                 then json.dumps(object, ensure_ascii, indent).
                 -> {"results": [{"body", "signature"}]}
  op "url"       items [{"secret", "baseUrl", "projectId", "paymentId", "params": [[name, "<JSON value>"], ...]}]
                 Payment(projectId, paymentId), each parameter set as an attribute in order (best_before is
                 given as ISO 8601 text and set as datetime.fromisoformat of it, as Payment requires a datetime),
                 then Gate(secret, baseUrl).get_purchase_payment_page_url(payment)
                 -> {"results": [{"url", "params": "<payment.get_params() as JSON text>"}]}
"""
import json
import sys
from datetime import datetime

from payment_page_sdk.gate import Gate
from payment_page_sdk.payment import Payment
from payment_page_sdk.signature_handler import SignatureHandler


def sdk_string(handler, params):
    leaves = handler._SignatureHandler__get_params_to_sign(params, handler.IGNORE_KEYS)
    return handler.ITEMS_DELIMITER.join(value for _, value in sorted(leaves.items(), key=lambda t: t[0]))


def run_sign(item):
    params = json.loads(item["json"])
    handler = SignatureHandler(item["secret"])
    return {"string": sdk_string(handler, params), "signature": handler.sign(params)}


def text(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def run_callback(item):
    try:
        callback = Gate(item["secret"]).handle_callback(item["body"])
    except Exception as error:  # the SDK raises ProcessException, and other errors on odd bodies
        return {"accepted": False, "error": str(error), "errorType": type(error).__name__}
    return {"accepted": True, "paymentId": text(callback.get_payment_id()), "paymentStatus": text(callback.get_payment_status()),
            "amount": text(callback.get_value("payment.sum.amount")), "signature": text(callback.get_signature())}


def set_path(data, path, value):
    keys = path.split(".")
    for key in keys[:-1]:
        data = data[key]
    data[keys[-1]] = value


def run_build(item):
    data = json.loads(item["json"])
    signature = SignatureHandler(item["secret"]).sign(data)
    if item["place"] == "general":
        data.setdefault("general", {})["signature"] = signature
    else:
        data["signature"] = signature
    for path, value in item.get("tamper") or []:
        set_path(data, path, json.loads(value))
    body = json.dumps(data, ensure_ascii=item.get("ensureAscii", True), indent=item.get("indent"))
    return {"body": body, "signature": signature}


def run_url(item):
    payment = Payment(item["projectId"], item["paymentId"])
    for name, value in item["params"]:
        value = json.loads(value)
        if name == "best_before":
            value = datetime.fromisoformat(value)
        setattr(payment, name, value)
    url = Gate(item["secret"], item["baseUrl"]).get_purchase_payment_page_url(payment)
    return {"url": url, "params": json.dumps(payment.get_params(), ensure_ascii=False)}


OPERATIONS = {"sign": run_sign, "callback": run_callback, "build": run_build, "url": run_url}


def main():
    request = json.load(sys.stdin)
    operation = OPERATIONS[request["op"]]
    json.dump({"results": [operation(item) for item in request["items"]]}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
