"""The official SDK's v1HMAC authenticator signs requests another client built.

Usage: python sign.py   stdin {"apiKeyId": ..., "secretApiKey": ...,
                               "requests": [{"method": "POST", "url": "http://host:port/v1/1234/payments?x=y",
                                             "headers": [["Content-Type", "application/json"], ...]}, ...]}
  -> {"results": [{"authorization": "GCS v1HMAC:...", "dataToSign": "..."}, ...]}

The URL is parsed with urllib's urlparse, as the SDK's Communicator parses the URL it sends to; the
headers are passed as the SDK's RequestHeader list, in the order given (Authorization left out).
"""
import json
import sys
from urllib.parse import urlparse

from worldline.connect.sdk.authentication.v1hmac_authenticator import V1HMACAuthenticator
from worldline.connect.sdk.communication.request_header import RequestHeader


def main():
    request = json.load(sys.stdin)
    authenticator = V1HMACAuthenticator(request["apiKeyId"], request["secretApiKey"])
    results = []
    for item in request["requests"]:
        uri = urlparse(item["url"])
        headers = [RequestHeader(name, value) for name, value in item["headers"] if name.lower() != "authorization"]
        results.append({
            "authorization": authenticator.get_authorization(item["method"], uri, headers),
            "dataToSign": authenticator.to_data_to_sign(item["method"], uri, headers),
        })
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()
