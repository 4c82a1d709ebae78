"""iPayNow's official Python SDK (PyPI ipaynow-python-sdk 1.0.0, package ipaynow_sdk) as the other party.

One call per run: a JSON object on standard input, a JSON object on standard output. Every operation is
a batch ("items"), so one test starts the interpreter once. The SDK is only called, never re-implemented:
the string to sign is its signer._canonical, the signature its signer.sign, the check its signer.verify,
the body reader its parser.parse_response, the notification entry points its NotifyParser.

Usage: python ipaynow_bridge.py   stdin {"op": ..., "appId": ..., "appKey": ..., "items": [...]}

  op "sign"     items [{"fields": [[name, value], ...], "excludeSignType": bool, "excluded": [name, ...]}]
                -> {"results": [{"canonical": _canonical(fields, excludeSignType, *excluded),
                                 "signature": sign(fields, cfg, excludeSignType, *excluded)}]}
  op "verify"   items [{"body": "<form body as received>", "signatureField": "signature",
                        "excludeSignType": bool}]
                -> {"results": [{"ok": verify(parse_response(body), cfg, signatureField, excludeSignType),
                                 "fields": parse_response(body)}]}
  op "notify"   items [{"body": ..., "kind": "payment" | "refund"}]
                NotifyParser.parse_payment / parse_refund
                -> {"results": [{"accepted": true, "isSuccess": ..., "fields": {...}, "ack": NotifyAck.success()}
                                | {"accepted": false, "error": "E0012", "ack": NotifyAck.fail()}]}
  op "build"    items [{"fields": [[name, value], ...], "excludeSignType": bool}]
                the body of a message from iPayNow as the SDK signs one: signature = sign(fields, cfg,
                excludeSignType, "signature"), then the fields and the signature form-encoded with
                urllib.parse.urlencode, as the SDK's own transport (transport.UrllibHttpTransport.post)
                encodes a form.
                -> {"results": [{"body": ..., "signature": ...}]}

appId and appKey make the SDK's IpaynowConfig (MD5 mode) for every item; an item that carries its own
"appId" and "appKey" is checked with a config of its own (the real messages come from several apps).
"""
import json
import sys
from urllib.parse import urlencode

from ipaynow_sdk import IpaynowConfig, IpaynowError, NotifyAck, NotifyParser
from ipaynow_sdk.parser import parse_response
from ipaynow_sdk.signer import _canonical, sign, verify


def pairs_to_dict(pairs):
    fields = {}
    for name, value in pairs:
        fields[name] = value
    return fields


def run_sign(cfg, item):
    fields = pairs_to_dict(item["fields"])
    excluded = item.get("excluded", [])
    flag = item["excludeSignType"]
    return {"canonical": _canonical(fields, flag, *excluded), "signature": sign(fields, cfg, flag, *excluded)}


def run_verify(cfg, item):
    fields = parse_response(item["body"])
    ok = verify(fields, cfg, item.get("signatureField", "signature"), item["excludeSignType"])
    return {"ok": bool(ok), "fields": fields}


def run_notify(cfg, item):
    parse = NotifyParser.parse_payment if item["kind"] == "payment" else NotifyParser.parse_refund
    try:
        response = parse(item["body"], cfg)
    except IpaynowError as error:
        return {"accepted": False, "error": error.code.value, "ack": NotifyAck.fail()}
    return {"accepted": True, "isSuccess": bool(response.is_success()), "fields": response.fields(),
            "ack": NotifyAck.success() if response.is_success() else NotifyAck.fail()}


def run_build(cfg, item):
    fields = pairs_to_dict(item["fields"])
    signature = sign(fields, cfg, item["excludeSignType"], "signature")
    fields["signature"] = signature
    return {"body": urlencode(fields), "signature": signature}


OPERATIONS = {"sign": run_sign, "verify": run_verify, "notify": run_notify, "build": run_build}


def main():
    request = json.load(sys.stdin)
    default = IpaynowConfig(request["appId"], request["appKey"])
    operation = OPERATIONS[request["op"]]
    results = []
    for item in request["items"]:
        cfg = IpaynowConfig(item["appId"], item["appKey"]) if "appKey" in item else default
        results.append(operation(cfg, item))
    json.dump({"results": results}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
